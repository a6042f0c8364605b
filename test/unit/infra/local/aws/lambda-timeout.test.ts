/** Lambda's timeout as the local runtime emulates it (infra/local/aws/lambda-timeout.ts): an invocation past it reaches no AWS service. */
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { describe, expect, test } from 'vitest';
import { createLocalGateway } from '../../../../../infra/local/aws/gateway.js';
import { lambdaContext } from '../../../../../infra/local/http-server.js';
import { cutAtLambdaTimeout, invokeWithTimeout, LambdaTimeoutError } from '../../../../../infra/local/aws/lambda-timeout.js';
import { buildHttpApiEvent } from '../../../../support/api.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** An EventBridge client that reaches no network: every request that leaves it is counted and answered as accepted, `answersAfterMs` later. */
function countedClient(answersAfterMs = 0) {
  const sent: unknown[] = [];
  const client = new EventBridgeClient({
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    requestHandler: {
      handle: async (request: unknown) => {
        sent.push(request);
        await sleep(answersAfterMs);
        return { response: { statusCode: 200, headers: { 'content-type': 'application/x-amz-json-1.1' }, body: new TextEncoder().encode('{"FailedEntryCount":0,"Entries":[]}') } };
      },
    },
  });
  return { client: cutAtLambdaTimeout(client), sent };
}

const putEvent = (client: EventBridgeClient) => client.send(new PutEventsCommand({ Entries: [{ Source: 'test', DetailType: 'tick', Detail: '{}' }] }));

describe('an invocation past its Lambda timeout', () => {
  test('is refused every call it makes afterwards, with the line Lambda logs naming the timeout, and none leaves the process', async () => {
    const { client, sent } = countedClient();
    const running = new Set<Promise<unknown>>();
    let refusal: unknown;
    const invocation = invokeWithTimeout(
      'worker',
      50,
      async () => {
        await sleep(100);
        refusal = await putEvent(client).catch((error: unknown) => error);
      },
      { running },
    );
    await invocation.catch(() => undefined);
    await Promise.all([...running]);

    expect(refusal).toBeInstanceOf(LambdaTimeoutError);
    expect((refusal as Error).message).toMatch(/^Task timed out after 0\.05 seconds: the worker function's Lambda timeout/);
    expect(sent).toEqual([]);
  });

  test('fails with LambdaTimeoutError at its timeout, whether or not its handler ever ends', async () => {
    const handlerNeverEnds = new Promise<never>(() => undefined);
    await expect(invokeWithTimeout('poller', 50, () => handlerNeverEnds)).rejects.toMatchObject({
      name: 'Sandbox.Timedout',
      message: expect.stringContaining('Task timed out after 0.05 seconds'),
    });
  });

  test('a promise it left behind is refused its calls too', async () => {
    const { client, sent } = countedClient();
    let detached: Promise<unknown> | undefined;
    await invokeWithTimeout('worker', 50, async () => {
      detached = sleep(100).then(() => putEvent(client));
    });

    await expect(detached).rejects.toBeInstanceOf(LambdaTimeoutError);
    expect(sent).toEqual([]);
  });

  test('a call made before the timeout goes out, and its answer is had', async () => {
    const { client, sent } = countedClient();
    const answer = await invokeWithTimeout('worker', 1_000, () => putEvent(client));
    expect(answer).toMatchObject({ FailedEntryCount: 0 });
    expect(sent).toHaveLength(1);
  });

  test('a call whose answer comes after the timeout fails, as the frozen function never hears it', async () => {
    const { client, sent } = countedClient(100);
    const running = new Set<Promise<unknown>>();
    let outcome: unknown;
    await invokeWithTimeout('worker', 50, async () => (outcome = await putEvent(client).catch((error: unknown) => error)), { running }).catch(() => undefined);
    await Promise.all([...running]);

    expect(sent).toHaveLength(1);
    expect(outcome).toBeInstanceOf(LambdaTimeoutError);
  });

  test('does not cut the calls of another invocation still within its timeout, nor calls made outside any invocation', async () => {
    const { client, sent } = countedClient();
    const timedOut = invokeWithTimeout('poller', 50, () => sleep(100).then(() => putEvent(client))).catch((error: unknown) => error);
    const live = invokeWithTimeout('poller', 5_000, () => sleep(100).then(() => putEvent(client)));

    await expect(live).resolves.toMatchObject({ FailedEntryCount: 0 });
    await putEvent(client);
    expect(await timedOut).toBeInstanceOf(LambdaTimeoutError);
    expect(sent).toHaveLength(2);
  });

  test('its handler, still running after the timeout, is kept among the running until it ends', async () => {
    const running = new Set<Promise<unknown>>();
    let finish!: () => void;
    const invocation = invokeWithTimeout('worker', 20, () => new Promise<void>((resolve) => (finish = resolve)), { running }).catch(() => undefined);

    await invocation;
    expect(running.size).toBe(1);
    finish();
    await Promise.all([...running]);
    expect(running.size).toBe(0);
  });
});

describe('the api behind the local gateway', () => {
  test("past its timeout: the request has API Gateway's 500, and the api's calls from then on are refused", async () => {
    const { client, sent } = countedClient();
    let lateCall: Promise<unknown> | undefined;
    const gateway = createLocalGateway({
      authorizer: async () => ({ isAuthorized: true, context: {} }),
      api: async () => {
        await sleep(100);
        lateCall = putEvent(client).catch((error: unknown) => error);
        return { statusCode: 200, body: '{}' };
      },
      apiTimeoutMs: 50,
    });
    const event = buildHttpApiEvent('GET', '/v1/job-types', { headers: { authorization: 'Bearer k' } });

    expect((await gateway(event, lambdaContext(event.requestContext.requestId))).statusCode).toBe(500);
    await sleep(100);
    expect(await lateCall).toBeInstanceOf(LambdaTimeoutError);
    expect(sent).toEqual([]);
  });
});
