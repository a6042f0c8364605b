/**
 * The stack's IAM policies, checked in every test that runs a function's code:
 * a test's queue hands each function a client limited to that function's role
 * (`TestQueue.as`), and a call the role does not allow fails the test that made
 * it, even where the code under test swallows the error.
 */
import { inject } from 'vitest';
import type { IamDecision } from '../../infra/local/aws/iam/iam-check.js';
import { createLocalIam, type LocalIam } from '../../infra/local/aws/iam/local-iam.js';
import { LOCAL_ACCOUNT_ID } from '../../infra/local/aws/iam/local-policies.js';

const deniedCalls: IamDecision[] = [];

export const TEST_REGION = 'us-east-1';

/** `options.indexLagMs`: how far the `due` index lags for these functions' queries (infra/local/aws/index-lag.ts), on `indexLagClock`; none by default. */
export function localIamFor(
  tableName: string,
  onDecision?: (decision: IamDecision) => void,
  options: { indexLagMs?: number; indexLagClock?: () => number } = {},
): LocalIam {
  return createLocalIam(
    inject('stackPolicies'),
    { region: TEST_REGION, accountId: LOCAL_ACCOUNT_ID, tableName },
    {
      onDecision: (decision) => {
        if (!decision.allowed) deniedCalls.push(decision);
        onDecision?.(decision);
      },
      ...options,
    },
  );
}

/** The calls denied since the last take, oldest first. */
export function takeDeniedCalls(): IamDecision[] {
  return deniedCalls.splice(0);
}
