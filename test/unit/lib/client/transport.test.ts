/**
 * The typed client's requests and answers, with a stub `fetch`: what goes on
 * the wire, paging, and errors from answers that are not the API's own.
 * (test/integration/lib/client/index.test.ts runs it against the real api.)
 */
import { describe, expect, test } from 'vitest';
import { createClient, ForbiddenError, NotFoundError, QueueApiError, RateLimitedError, ServerError, UnauthorizedError } from '../../../../lib/client/index.js';
import type { Job } from '../../../../lib/domain/job.js';

interface Sent {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
}

/** A fetch that records each request and answers with the next of `answers`. */
function stubFetch(...answers: (() => Response)[]) {
  const sent: Sent[] = [];
  const fetchImpl: typeof fetch = async (input, init) => {
    sent.push({
      method: init?.method ?? 'GET',
      url: String(input),
      headers: init?.headers as Record<string, string>,
      body: typeof init?.body === 'string' ? JSON.parse(init.body) : undefined,
    });
    const answer = answers.shift();
    if (!answer) throw new Error('no answer left');
    return answer();
  };
  return { fetchImpl, sent };
}

const ok = (body: unknown) => () => new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } });
const job = (id: string) => ({ id }) as Job;

describe('requests', () => {
  test('path segments are encoded, the token is a bearer token, and a trailing slash of the url is dropped', async () => {
    const { fetchImpl, sent } = stubFetch(ok(job('a b')));
    await createClient({ url: 'https://queue.example/', token: 'k-1', fetch: fetchImpl }).get('emails', 'a b/c');
    expect(sent[0]!.url).toBe('https://queue.example/v1/jobs/emails/a%20b%2Fc');
    expect(sent[0]!.headers.authorization).toBe('Bearer k-1');
  });

  test('enqueue and enqueueBatch send their traceparent option as the traceparent header, and no such header without it', async () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const { fetchImpl, sent } = stubFetch(ok(job('x')), ok({ results: [] }), ok(job('y')));
    const client = createClient({ url: 'http://q', token: 't', fetch: fetchImpl });
    await client.enqueue('emails', { data: 1 }, { id: 'x', traceparent });
    await client.enqueueBatch('emails', [{ data: 2 }], { traceparent });
    await client.enqueue('emails', { data: 3 }, { id: 'y' });
    expect(sent.map((request) => request.headers.traceparent)).toEqual([traceparent, traceparent, undefined]);
  });

  test('enqueue sends Dates as ISO strings, leaves out what is not given, and JSON with its content type', async () => {
    const { fetchImpl, sent } = stubFetch(ok(job('x')));
    await createClient({ url: 'http://q', token: 't', fetch: fetchImpl }).enqueue(
      'emails',
      { data: { a: 1 }, run_after: new Date(Date.UTC(2027, 0, 2, 3, 4, 5)), priority: undefined },
      { id: 'x' },
    );
    expect(sent[0]).toMatchObject({ method: 'PUT', url: 'http://q/v1/jobs/emails/x', body: { data: { a: 1 }, run_after: '2027-01-02T03:04:05.000Z' } });
    expect(sent[0]!.headers['content-type']).toBe('application/json');
  });

  test('list sends status, limit and cursor as query parameters', async () => {
    const { fetchImpl, sent } = stubFetch(ok({ jobs: [], next_cursor: null }));
    await createClient({ url: 'http://q', token: 't', fetch: fetchImpl }).list('emails', { status: 'failed', limit: 20, cursor: 'c/1' });
    expect(sent[0]!.url).toBe('http://q/v1/jobs/emails?status=failed&limit=20&cursor=c%2F1');
  });

  test('listAll follows next_cursor until it is null', async () => {
    const { fetchImpl, sent } = stubFetch(
      ok({ jobs: [job('1'), job('2')], next_cursor: 'p2' }),
      ok({ jobs: [job('3')], next_cursor: null }),
    );
    const ids: string[] = [];
    for await (const found of createClient({ url: 'http://q', token: 't', fetch: fetchImpl }).listAll('emails', { status: 'queued' })) ids.push(found.id);
    expect(ids).toEqual(['1', '2', '3']);
    expect(sent.map((request) => request.url)).toEqual(['http://q/v1/jobs/emails?status=queued', 'http://q/v1/jobs/emails?status=queued&cursor=p2']);
  });
});

describe('errors from answers that are not the API\'s error body', () => {
  test("API Gateway's own 502 is a ServerError with its message and code internal", async () => {
    const { fetchImpl } = stubFetch(() => new Response('{"message":"Internal Server Error"}', { status: 502 }));
    const error = await createClient({ url: 'http://q', token: 't', fetch: fetchImpl, retries: 0 }).stats().catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ServerError);
    expect(error).toMatchObject({ status: 502, code: 'internal', message: 'Internal Server Error', details: [] });
  });

  test('an HTML 404 from a proxy is a NotFoundError, its request id from x-request-id', async () => {
    const { fetchImpl } = stubFetch(() => new Response('<html>not here</html>', { status: 404, headers: { 'x-request-id': 'r-9' } }));
    const error = await createClient({ url: 'http://q', token: 't', fetch: fetchImpl }).stats().catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error).toMatchObject({ code: 'http_404', requestId: 'r-9' });
  });

  test('a status without a class of its own is a QueueApiError with kind client_error', async () => {
    const { fetchImpl } = stubFetch(() => new Response('', { status: 418 }));
    const error = await createClient({ url: 'http://q', token: 't', fetch: fetchImpl }).stats().catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(QueueApiError);
    expect(error).toMatchObject({ kind: 'client_error', status: 418 });
  });
});

describe('a refused key and a missing scope', () => {
  const answer = (status: number, body: unknown) => () => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  const statsWith = (...answers: (() => Response)[]) => {
    const { fetchImpl, sent } = stubFetch(...answers);
    const error = createClient({ url: 'http://q', token: 't', fetch: fetchImpl }).stats().catch((thrown: unknown) => thrown);
    return { error, sent };
  };

  test("API Gateway's 403 Forbidden is an UnauthorizedError: the authorizer refused the key", async () => {
    const error = await statsWith(answer(403, { message: 'Forbidden' })).error;
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error).toMatchObject({ kind: 'unauthorized', status: 403, message: 'Forbidden' });
  });

  test("API Gateway's 401 Unauthorized is an UnauthorizedError: no key was sent", async () => {
    const error = await statsWith(answer(401, { message: 'Unauthorized' })).error;
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error).toMatchObject({ kind: 'unauthorized', status: 401 });
  });

  test("the API's own 401 is an UnauthorizedError with its code", async () => {
    const error = await statsWith(answer(401, { error: { code: 'unauthorized', message: 'the key has expired', details: [], request_id: 'r-1' } })).error;
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error).toMatchObject({ code: 'unauthorized', message: 'the key has expired', requestId: 'r-1' });
  });

  test("the API's own 403, with its error body, is a ForbiddenError: the key is valid but lacks a scope", async () => {
    const error = await statsWith(answer(403, { error: { code: 'forbidden', message: 'this route needs a read: scope', details: [], request_id: 'r-2' } })).error;
    expect(error).toBeInstanceOf(ForbiddenError);
    expect(error).toMatchObject({ kind: 'forbidden', status: 403, code: 'forbidden' });
  });

  test('a refused key is not retried, even on a request that is safe to repeat', async () => {
    for (const refusal of [answer(401, { message: 'Unauthorized' }), answer(403, { message: 'Forbidden' })]) {
      const { error, sent } = statsWith(refusal, ok({}));
      expect(await error).toMatchObject({ kind: 'unauthorized', tries: 1 });
      expect(sent).toHaveLength(1);
    }
  });
});

describe('overload', () => {
  const throttled = (retryAfter: string) => () =>
    new Response(JSON.stringify({ message: 'Too Many Requests' }), { status: 429, headers: { 'content-type': 'application/json', 'retry-after': retryAfter } });

  test("an enqueue without an id, refused with 429, is sent again after the answer's Retry-After", async () => {
    const { fetchImpl, sent } = stubFetch(throttled('2'), ok(job('server-id')));
    const slept: number[] = [];
    const client = createClient({ url: 'http://q', token: 't', fetch: fetchImpl, random: () => 0, sleep: async (ms) => void slept.push(ms) });
    expect(await client.enqueue('emails', { data: { to: 'ada' } })).toEqual({ id: 'server-id' });
    expect(sent.map(({ method, url }) => `${method} ${url}`)).toEqual(['POST http://q/v1/jobs/emails', 'POST http://q/v1/jobs/emails']);
    expect(slept).toEqual([2_000]);
  });

  test('a 503 with Retry-After is waited out before a request that is safe to repeat is sent again', async () => {
    const unavailable = () =>
      new Response(JSON.stringify({ error: { code: 'unavailable', message: 'overloaded', details: [], request_id: 'r' } }), {
        status: 503,
        headers: { 'content-type': 'application/json', 'retry-after': '1' },
      });
    const { fetchImpl, sent } = stubFetch(unavailable, ok(job('welcome-42')));
    const slept: number[] = [];
    const client = createClient({ url: 'http://q', token: 't', fetch: fetchImpl, random: () => 0, sleep: async (ms) => void slept.push(ms) });
    expect(await client.enqueue('emails', { data: {} }, { id: 'welcome-42' })).toEqual({ id: 'welcome-42' });
    expect(sent).toHaveLength(2);
    expect(slept).toEqual([1_000]);
  });

  test('still throttled after every retry: a RateLimitedError, with the tries it took', async () => {
    const { fetchImpl, sent } = stubFetch(throttled('0'), throttled('0'), throttled('0'));
    const client = createClient({ url: 'http://q', token: 't', fetch: fetchImpl, retries: 2, sleep: async () => undefined });
    const error = await client.enqueue('emails', { data: {} }).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(error).toMatchObject({ status: 429, tries: 3 });
    expect(sent).toHaveLength(3);
  });
});
