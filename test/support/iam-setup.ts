/** Fails any integration test during which a function made a call its role in the stack does not allow. */
import { afterEach } from 'vitest';
import { takeDeniedCalls } from './iam.js';

afterEach(() => {
  const denied = takeDeniedCalls();
  if (denied.length === 0) return;
  const lines = denied.map(({ fn, request }) => `  ${fn}: ${request.action} on ${request.resource} ${JSON.stringify(request.context)}`);
  throw new Error(`calls the stack's IAM policies deny (grant them in infra/ or stop making them):\n${[...new Set(lines)].join('\n')}`);
});
