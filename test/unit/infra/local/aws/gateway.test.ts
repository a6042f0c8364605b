/**
 * The local gateway answers as API Gateway's HTTP API does in front of the api
 * (infra/api-gateway.ts): which requests reach the authorizer, and the
 * gateway's own answers when it refuses one. A stub authorizer and api show
 * who was called.
 */
import { describe, expect, test, vi } from 'vitest';
import type { Authorizer } from '../../../../../functions/authorizer/app.js';
import { AUTHORIZED_ROUTES, authorizerOf, KEY_AUTHORIZER_CACHE_TTL_S } from '../../../../../infra/api-gateway.js';
import { createLocalGateway, LAMBDA_SYNC_REQUEST_MAX_BYTES, LAMBDA_SYNC_RESPONSE_MAX_BYTES } from '../../../../../infra/local/aws/gateway.js';
import { lambdaContext, type ApiHandler } from '../../../../../infra/local/http-server.js';
import { buildHttpApiEvent, type HttpMethod, type RequestOptions } from '../../../../support/api.js';

const ADMITTED = { isAuthorized: true, context: { principal: 'key', key_id: 'k1', scopes: 'admin' } };

function gatewayWith(authorize: Authorizer, options: { authorizerTimeoutMs?: number; nowMs?: () => number } = {}) {
  const authorizer = vi.fn(authorize);
  const api = vi.fn<ApiHandler>(async () => ({ statusCode: 200, body: '{}' }));
  const gateway = createLocalGateway({ authorizer, api, ...options });
  const send = async (method: HttpMethod, path: string, request: RequestOptions = {}) => {
    const event = buildHttpApiEvent(method, path, request);
    const answer = await gateway(event, lambdaContext(event.requestContext.requestId));
    return { status: answer.statusCode, contentType: answer.headers?.['content-type'], body: JSON.parse(answer.body ?? '') };
  };
  return { authorizer, api, send };
}

describe('a request without an Authorization header', () => {
  test('is 401 {"message":"Unauthorized"} and never reaches the authorizer', async () => {
    const { authorizer, api, send } = gatewayWith(async () => ADMITTED);
    expect(await send('GET', '/v1/job-types')).toEqual({ status: 401, contentType: 'application/json', body: { message: 'Unauthorized' } });
    expect(authorizer).not.toHaveBeenCalled();
    expect(api).not.toHaveBeenCalled();
  });

  test('with an empty header is the same 401: API Gateway wants the identity source non-empty', async () => {
    const { authorizer, send } = gatewayWith(async () => ADMITTED);
    expect(await send('GET', '/v1/job-types', { headers: { authorization: '' } })).toMatchObject({ status: 401, body: { message: 'Unauthorized' } });
    expect(authorizer).not.toHaveBeenCalled();
  });

  test.each([
    { route: 'a status callback', path: '/v1/jobs/emails/j1?token=t' },
    { route: 'a heartbeat', path: '/v1/jobs/emails/j1/heartbeat?token=t' },
  ])('still reaches the authorizer on $route, whose authorizer has no identity source', async ({ path }) => {
    const { authorizer, api, send } = gatewayWith(async () => ADMITTED);
    expect((await send('POST', path, { body: { attempt: 1 } })).status).toBe(200);
    expect(authorizer).toHaveBeenCalledOnce();
    expect(authorizer.mock.calls[0]![0].identitySource).toEqual([]);
    expect(api).toHaveBeenCalledOnce();
  });

  test.each([
    { route: 'a batch, though its path looks like a status callback', path: '/v1/jobs/emails/batch' },
    { route: 'a correlation callback', path: '/v1/callbacks/k1?token=t' },
    { route: '/jobber/queue', path: '/jobber/queue' },
    { route: 'a replay, a route of the job the callback token does not open', path: '/v1/jobs/emails/j1/replay?token=t' },
  ])('is 401 without the authorizer on $route', async ({ path }) => {
    const { authorizer, send } = gatewayWith(async () => ADMITTED);
    expect((await send('POST', path, { body: {} })).status).toBe(401);
    expect(authorizer).not.toHaveBeenCalled();
  });

  test('a GET of a job is 401 without the authorizer: only POST is the callback route', async () => {
    const { authorizer, send } = gatewayWith(async () => ADMITTED);
    expect((await send('GET', '/v1/jobs/emails/j1?token=t')).status).toBe(401);
    expect(authorizer).not.toHaveBeenCalled();
  });

  test('reaches the api on the public GETs, with no authorizer', async () => {
    const { authorizer, api, send } = gatewayWith(async () => ADMITTED);
    for (const path of ['/health', '/', '/dashboard/app.js']) expect((await send('GET', path)).status).toBe(200);
    expect(authorizer).not.toHaveBeenCalled();
    expect(api).toHaveBeenCalledTimes(3);
  });

  test('is 401 on a POST to /health: only its GET is public', async () => {
    const { api, send } = gatewayWith(async () => ADMITTED);
    expect((await send('POST', '/health', { body: {} })).status).toBe(401);
    expect(api).not.toHaveBeenCalled();
  });
});

describe('a request the authorizer refuses', () => {
  test('is 403 {"message":"Forbidden"}, with no error object, and never reaches the api', async () => {
    const { api, send } = gatewayWith(async () => ({ isAuthorized: false, context: {} }));
    expect(await send('GET', '/v1/job-types', { token: 'not-a-key' })).toEqual({ status: 403, contentType: 'application/json', body: { message: 'Forbidden' } });
    expect(api).not.toHaveBeenCalled();
  });

  test('hands the authorizer the Authorization header as its identity source', async () => {
    const { authorizer, send } = gatewayWith(async () => ({ isAuthorized: false, context: {} }));
    await send('GET', '/v1/job-types', { token: 'k' });
    expect(authorizer.mock.calls[0]![0].identitySource).toEqual(['Bearer k']);
  });
});

describe('an authorizer that fails', () => {
  test('by throwing is 500 {"message":"Internal Server Error"}', async () => {
    const { api, send } = gatewayWith(async () => {
      throw new Error('the table is unreachable');
    });
    expect(await send('GET', '/v1/job-types', { token: 'k' })).toEqual({ status: 500, contentType: 'application/json', body: { message: 'Internal Server Error' } });
    expect(api).not.toHaveBeenCalled();
  });

  test('by not answering within its timeout is the same 500', async () => {
    const { api, send } = gatewayWith(() => new Promise(() => undefined), { authorizerTimeoutMs: 20 });
    expect(await send('GET', '/v1/job-types', { token: 'k' })).toMatchObject({ status: 500, body: { message: 'Internal Server Error' } });
    expect(api).not.toHaveBeenCalled();
  });
});

test('an admitted request reaches the api with the authorizer context', async () => {
  const { api, send } = gatewayWith(async () => ADMITTED);
  expect((await send('GET', '/v1/job-types', { token: 'k' })).status).toBe(200);
  expect(api.mock.calls[0]![0].requestContext).toMatchObject({ authorizer: { lambda: ADMITTED.context } });
});

test('each route of its own picks the authorizer the stack gives it', () => {
  const sample = (template: string) => template.replace(/\{[^}]+\}/g, 'x1');
  for (const route of AUTHORIZED_ROUTES) expect(authorizerOf(route.method, sample(route.path))).toBe(route.authorizer);
});

describe("the authorizer's answers, kept as API Gateway keeps them", () => {
  const TTL_MS = KEY_AUTHORIZER_CACHE_TTL_S * 1000;
  function clockedGateway(authorize: Authorizer) {
    let nowMs = 1_000_000;
    const gateway = gatewayWith(authorize, { nowMs: () => nowMs });
    return { ...gateway, advance: (ms: number) => (nowMs += ms) };
  }

  test('the same Authorization header within the TTL reaches the api without asking the authorizer again', async () => {
    const { authorizer, api, send, advance } = clockedGateway(async () => ADMITTED);
    await send('GET', '/v1/job-types', { token: 'k' });
    advance(TTL_MS - 1);
    expect((await send('PUT', '/v1/jobs/emails/j1', { token: 'k', body: {} })).status).toBe(200);
    expect(authorizer).toHaveBeenCalledOnce();
    expect(api.mock.calls[1]![0].requestContext).toMatchObject({ authorizer: { lambda: ADMITTED.context } });
  });

  test('once the TTL has passed the authorizer is asked again, so a revoked key stops within it', async () => {
    const { authorizer, send, advance } = clockedGateway(async () => ADMITTED);
    await send('GET', '/v1/job-types', { token: 'k' });
    authorizer.mockImplementation(async () => ({ isAuthorized: false, context: {} }));
    advance(TTL_MS);
    expect((await send('GET', '/v1/job-types', { token: 'k' })).status).toBe(403);
    expect(authorizer).toHaveBeenCalledTimes(2);
  });

  test('a refusal is kept too', async () => {
    const { authorizer, send } = clockedGateway(async () => ({ isAuthorized: false, context: {} }));
    await send('GET', '/v1/job-types', { token: 'k' });
    expect((await send('GET', '/v1/job-types', { token: 'k' })).status).toBe(403);
    expect(authorizer).toHaveBeenCalledOnce();
  });

  test('another Authorization header is asked about on its own', async () => {
    const { authorizer, send } = clockedGateway(async () => ADMITTED);
    await send('GET', '/v1/job-types', { token: 'k1' });
    await send('GET', '/v1/job-types', { token: 'k2' });
    expect(authorizer.mock.calls.map(([event]) => event.identitySource)).toEqual([['Bearer k1'], ['Bearer k2']]);
  });

  test('a failure is not kept: the next request asks again', async () => {
    const { authorizer, send } = clockedGateway(async () => {
      throw new Error('the table is unreachable');
    });
    await send('GET', '/v1/job-types', { token: 'k' });
    authorizer.mockImplementation(async () => ADMITTED);
    expect((await send('GET', '/v1/job-types', { token: 'k' })).status).toBe(200);
  });

  test('a callback, whose authorizer has no identity source, asks the authorizer every time', async () => {
    const { authorizer, send } = clockedGateway(async () => ADMITTED);
    await send('POST', '/v1/jobs/emails/j1?token=t', { body: { attempt: 1 } });
    await send('POST', '/v1/jobs/emails/j1?token=t', { body: { attempt: 1 } });
    expect(authorizer).toHaveBeenCalledTimes(2);
  });
});

describe("the api invoked within Lambda's limits", () => {
  const quietLog = () => vi.spyOn(console, 'error').mockImplementation(() => undefined);

  function gatewayAnswering(answer: () => Promise<{ statusCode: number; body: string }>, apiTimeoutMs?: number) {
    const api = vi.fn<ApiHandler>(answer);
    const gateway = createLocalGateway({ authorizer: async () => ADMITTED, api, ...(apiTimeoutMs === undefined ? {} : { apiTimeoutMs }) });
    const send = async (request: RequestOptions = {}) => {
      const event = buildHttpApiEvent('GET', '/v1/job-types', { token: 'k', ...request });
      const result = await gateway(event, lambdaContext(event.requestContext.requestId));
      return { status: result.statusCode, body: JSON.parse(result.body ?? '') };
    };
    return { api, send };
  }

  test("an answer over Lambda's 6 MiB response payload is API Gateway's 500, logged naming the limit", async () => {
    const logged = quietLog();
    const { send } = gatewayAnswering(async () => ({ statusCode: 200, body: JSON.stringify({ text: 'x'.repeat(LAMBDA_SYNC_RESPONSE_MAX_BYTES) }) }));
    expect(await send()).toEqual({ status: 500, body: { message: 'Internal Server Error' } });
    expect(logged.mock.calls.map(String).join('\n')).toContain("over Lambda's synchronous response payload limit");
    logged.mockRestore();
  });

  test('an answer whose JSON escaping takes it over the limit is refused too', async () => {
    const logged = quietLog();
    const quotes = '"'.repeat(Math.ceil(LAMBDA_SYNC_RESPONSE_MAX_BYTES / 2) - 100);
    const { send } = gatewayAnswering(async () => ({ statusCode: 200, body: JSON.stringify({ quotes }) }));
    expect((await send()).status).toBe(500);
    logged.mockRestore();
  });

  test('an answer just under the limit passes as it is', async () => {
    const body = JSON.stringify({ text: 'x'.repeat(LAMBDA_SYNC_RESPONSE_MAX_BYTES - 1_000) });
    const { send } = gatewayAnswering(async () => ({ statusCode: 200, body }));
    expect((await send()).status).toBe(200);
  });

  test("an event over Lambda's 6 MiB request payload is refused with 413 before the api runs", async () => {
    const logged = quietLog();
    const { api, send } = gatewayAnswering(async () => ({ statusCode: 200, body: '{}' }));
    expect(await send({ body: { data: 'x'.repeat(LAMBDA_SYNC_REQUEST_MAX_BYTES) } })).toEqual({ status: 413, body: { message: 'Request Entity Too Large' } });
    expect(api).not.toHaveBeenCalled();
    logged.mockRestore();
  });

  test("an api that does not answer within its Lambda timeout is API Gateway's 500", async () => {
    const logged = quietLog();
    const { send } = gatewayAnswering(() => new Promise(() => undefined), 20);
    expect(await send()).toEqual({ status: 500, body: { message: 'Internal Server Error' } });
    expect(logged.mock.calls.map(String).join('\n')).toContain('within its Lambda timeout');
    logged.mockRestore();
  });
});
