/**
 * Every AWS SDK client a function makes is bounded: how often a call is tried, how long a try may take to connect
 * and to be answered (lib/domain/limits.ts says against what each is chosen). Read off the configuration each
 * client is made with, as each function's entry point makes its clients at a cold start, with every setting that
 * makes it create one given; the source is searched for a client made anywhere else, which this would not see.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test, vi } from 'vitest';
import { AUTHORIZER_TIMEOUT_S, MAX_WORKER_ATTEMPT_S, SECRET_READ_CALL_LIMITS, TARGET_LAMBDA_CALL_LIMITS, maxDynamoCallMs } from '../../../../lib/domain/limits.js';

interface MadeClient {
  client: string;
  config: unknown;
}

const { made, recording } = vi.hoisted(() => {
  const made: MadeClient[] = [];
  // A client class that notes the configuration it is made with, and is otherwise the SDK's own.
  const recording = <C extends new (...args: any[]) => object>(client: string, Base: C): C =>
    class extends Base {
      constructor(...args: any[]) {
        made.push({ client, config: args[0] });
        super(...args);
      }
    };
  return { made, recording };
});

vi.mock('@aws-sdk/client-dynamodb', async (importOriginal) => {
  const sdk = await importOriginal<typeof import('@aws-sdk/client-dynamodb')>();
  return { ...sdk, DynamoDBClient: recording('DynamoDBClient', sdk.DynamoDBClient) };
});
vi.mock('@aws-sdk/client-eventbridge', async (importOriginal) => {
  const sdk = await importOriginal<typeof import('@aws-sdk/client-eventbridge')>();
  return { ...sdk, EventBridgeClient: recording('EventBridgeClient', sdk.EventBridgeClient) };
});
vi.mock('@aws-sdk/client-lambda', async (importOriginal) => {
  const sdk = await importOriginal<typeof import('@aws-sdk/client-lambda')>();
  return { ...sdk, LambdaClient: recording('LambdaClient', sdk.LambdaClient) };
});
vi.mock('@aws-sdk/client-ssm', async (importOriginal) => {
  const sdk = await importOriginal<typeof import('@aws-sdk/client-ssm')>();
  return { ...sdk, SSMClient: recording('SSMClient', sdk.SSMClient) };
});
vi.mock('@aws-sdk/client-sqs', async (importOriginal) => {
  const sdk = await importOriginal<typeof import('@aws-sdk/client-sqs')>();
  return { ...sdk, SQSClient: recording('SQSClient', sdk.SQSClient) };
});

/** Every setting that makes a function create a client: the stack's, as a deployed function reads them. */
const DEPLOYED_ENVIRONMENT = {
  AWS_REGION: 'us-east-1',
  TABLE_NAME: 'jobs',
  EVENT_BUS_NAME: 'jobs-events',
  WORKER_FUNCTION_NAME: 'worker',
  POLLER_FUNCTION_NAME: 'poller',
  SWEEPER_FUNCTION_NAME: 'sweeper',
  WAKE_TIMER_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/123456789012/wake-timers',
  PUBLIC_API_URL: 'https://api.example.com',
  CALLBACK_TOKEN_PARAMETER: '/Jobs/Queue/callback-token-secret',
};
const FUNCTIONS = ['api', 'authorizer', 'poller', 'sweeper', 'waker', 'worker'] as const;

const environmentBefore = { ...process.env };
beforeAll(() => {
  Object.assign(process.env, DEPLOYED_ENVIRONMENT);
});
afterAll(() => {
  process.env = environmentBefore;
});

/** The clients `fn`'s entry point makes as it loads, in a fresh module graph, as a cold start does. */
async function clientsMadeAtColdStart(fn: (typeof FUNCTIONS)[number]): Promise<MadeClient[]> {
  made.length = 0;
  vi.resetModules();
  await import(`../../../../functions/${fn}/index.ts`);
  return [...made];
}

/** The SDK clients made with `new` anywhere in the code the functions run. */
function clientClassesInSource(): Set<string> {
  const classes = new Set<string>();
  const visit = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) visit(path);
      else if (path.endsWith('.ts')) for (const [, name] of readFileSync(path, 'utf8').matchAll(/new (\w+Client)\(/g)) classes.add(name!);
    }
  };
  visit('functions');
  visit('lib');
  return classes;
}

test.each(FUNCTIONS)('every AWS client the %s makes has a bounded number of tries, a connection timeout and a request timeout', async (fn) => {
  const clients = await clientsMadeAtColdStart(fn);
  expect(clients.length).toBeGreaterThan(0);
  for (const { client, config } of clients) {
    expect(config, client).toMatchObject({
      maxAttempts: expect.any(Number),
      requestHandler: { connectionTimeout: expect.any(Number), requestTimeout: expect.any(Number), throwOnRequestTimeout: true },
    });
    const { maxAttempts, requestHandler } = config as typeof SECRET_READ_CALL_LIMITS;
    expect(maxAttempts, client).toBeGreaterThanOrEqual(1);
    expect(requestHandler.connectionTimeout, client).toBeGreaterThan(0);
    expect(requestHandler.requestTimeout, client).toBeGreaterThan(0);
  }
});

test('every kind of client the source makes is made by some function at its cold start, so the checks above see it', async () => {
  const seen = new Set<string>();
  for (const fn of FUNCTIONS) for (const { client } of await clientsMadeAtColdStart(fn)) seen.add(client);
  expect([...clientClassesInSource()].sort()).toEqual([...seen].sort());
});

test('a read of the callback token secret, its latest version then the one before, every retry and backoff included, leaves the authorizer time to answer', () => {
  expect(2 * maxDynamoCallMs(SECRET_READ_CALL_LIMITS)).toBeLessThan(AUTHORIZER_TIMEOUT_S * 1000);
});

test("a lambda target is invoked once per attempt, and its request timeout never cuts short what the attempt's own timeout allows", () => {
  expect(TARGET_LAMBDA_CALL_LIMITS.maxAttempts).toBe(1);
  expect(TARGET_LAMBDA_CALL_LIMITS.requestHandler.requestTimeout).toBeGreaterThanOrEqual(MAX_WORKER_ATTEMPT_S * 1000);
});
