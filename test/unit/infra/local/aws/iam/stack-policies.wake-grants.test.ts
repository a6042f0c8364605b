/**
 * What the stack lets each function do to wake the poller and the sweeper, as the local runtime enforces it: the
 * policies read from the synthesized stack, made concrete for a local table (infra/local/iam).
 */
import { beforeAll, describe, expect, test } from 'vitest';
import { AccessDeniedException } from '../../../../../../infra/local/aws/iam/iam-check.js';
import { createLocalIam, type LocalIam } from '../../../../../../infra/local/aws/iam/local-iam.js';
import { LOCAL_ACCOUNT_ID } from '../../../../../../infra/local/aws/iam/local-policies.js';
import { dynamoDbRequests, lambdaInvokeRequests } from '../../../../../../infra/local/aws/iam/requests.js';
import { QUEUE_FUNCTIONS, readStackPolicies } from '../../../../../../infra/local/aws/iam/stack-policies.js';
import { PARTITION_PREFIX } from '../../../../../../lib/store/keys.js';
import type { WakeRequest } from '../../../../../../lib/domain/invocations.js';

const account = { region: 'eu-west-1', accountId: LOCAL_ACCOUNT_ID, tableName: 'jobs' };
/** The waker, which reads what the poller and the sweeper act on from the table's stream, and the two themselves (a handover). */
const WAKERS = new Set(['poller', 'sweeper', 'waker']);
/** The functions that write WAKE# items: those that wake, and the api, which notes a job type's change there for awake pollers. */
const WAKE_ITEM_WRITERS = new Set([...WAKERS, 'api']);
/** The functions that hold leases on wake items, reading them as they start and look. */
const LEASE_HOLDERS = new Set(['poller', 'sweeper']);
const wakeRecordKey = { pk: `${PARTITION_PREFIX.wake}poller#0`, sk: 'WAKE' };

let iam: LocalIam;

beforeAll(() => {
  iam = createLocalIam(readStackPolicies(), account);
}, 60_000);

describe('invoking the functions', () => {
  test('the poller still may invoke the worker, which the stack leaves unnamed', async () => {
    const { arns } = iam.check.policies;
    await expect(iam.check.forFunction('poller').authorize(lambdaInvokeRequests(arns.workerFunction, account))).resolves.toBeUndefined();
    expect(arns.workerFunction).toMatch(/:function:WorkerFunction[0-9A-F]{8}$/);
  });

  test("the api's role may invoke none of the functions: the waker reads what it writes", async () => {
    const { arns } = iam.check.policies;
    const api = iam.check.forFunction('api');
    for (const arn of [arns.pollerFunction, arns.sweeperFunction, arns.workerFunction]) await expect(api.authorize(lambdaInvokeRequests(arn, account))).rejects.toBeInstanceOf(AccessDeniedException);
  });

  test.each(QUEUE_FUNCTIONS)('the %s may wake the poller and the sweeper only if it reads what they act on, or is one of them', async (fn) => {
    const wake = iam.wakerFor(fn, { wake: async () => undefined });
    const requests: WakeRequest[] = [{ role: 'poller', shards: [0] }, { role: 'sweeper' }];
    for (const request of requests) {
      if (WAKERS.has(fn)) await expect(wake.wake(request)).resolves.toBeUndefined();
      else await expect(wake.wake(request)).rejects.toBeInstanceOf(AccessDeniedException);
    }
  });

  test('the poller and the sweeper are named in the policies by the names the stack gives them, the local ARNs end in those names', () => {
    const { arns } = iam.check.policies;
    expect(arns.pollerFunction).toMatch(/:function:DelayedJobQueue-Poller-[0-9A-F]{8}$/);
    expect(arns.sweeperFunction).toMatch(/:function:DelayedJobQueue-Sweeper-[0-9A-F]{8}$/);
  });
});

describe('wake records', () => {
  test.each(QUEUE_FUNCTIONS)('the %s may update a WAKE# item (a hold, a lease, a types change) only if it wakes the poller and the sweeper or changes job types, and read one only if it holds leases', async (fn) => {
    const check = iam.check.forFunction(fn);
    for (const [call, allowed] of [
      ['UpdateItem', WAKE_ITEM_WRITERS],
      ['GetItem', LEASE_HOLDERS],
    ] as const) {
      const requests = dynamoDbRequests(call, { TableName: account.tableName, Key: wakeRecordKey }, account);
      if (allowed.has(fn)) await expect(check.authorize(requests)).resolves.toBeUndefined();
      else await expect(check.authorize(requests)).rejects.toBeInstanceOf(AccessDeniedException);
    }
  });

  test('no function may put or delete a WAKE# item', async () => {
    for (const fn of QUEUE_FUNCTIONS) {
      const check = iam.check.forFunction(fn);
      await expect(check.authorize(dynamoDbRequests('PutItem', { TableName: account.tableName, Item: wakeRecordKey }, account))).rejects.toBeInstanceOf(AccessDeniedException);
      await expect(check.authorize(dynamoDbRequests('DeleteItem', { TableName: account.tableName, Key: wakeRecordKey }, account))).rejects.toBeInstanceOf(AccessDeniedException);
    }
  });
});
