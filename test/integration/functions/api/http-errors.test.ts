/**
 * docs/reference/http-api.md: a failing dependency is a clean 500 — code `internal`, no cause,
 * no stack — while the cause is logged with the request id for the operator.
 * A DynamoDB that is only overloaded or unreachable for now (throttled, timed
 * out, refused) is a 503 with Retry-After instead: try again, not a fault.
 */
import { DynamoDBClient, ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import { jobTypeFromInput } from '../../../support/job-types.js';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, test, vi, type MockInstance } from 'vitest';
import { createQueueContext } from '../../../../lib/queue/context.js';
import { readQueueSettings } from '../../../../lib/queue/settings.js';
import { putJobTypeParams } from '../../../../lib/store/catalog.js';
import { jobTypeInputSchema } from '../../../../lib/wire/job-types.js';
import { createTestApi, leaksInternals, type ApiClient, type HttpMethod } from '../../../support/api.js';

const INTERNAL_MESSAGE = 'socket hang up: connect ECONNRESET 10.0.3.17:8000 (table jobs-prod-7f3a, secret=hunter2)';

const dbMock = mockClient(DynamoDBDocumentClient);
let api: ApiClient;
let consoleError: MockInstance<typeof console.error>;

beforeEach(() => {
  dbMock.reset();
  dbMock.onAnyCommand().rejects(new Error(INTERNAL_MESSAGE));
  const base = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:9',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
  });
  const ctx = createQueueContext(DynamoDBDocumentClient.from(base), readQueueSettings({ TABLE_NAME: 'jobs-prod-7f3a' }), {
    nowMs: () => Date.parse('2026-11-21T10:00:00.000Z'),
    random: () => 0.5,
  });
  api = createTestApi({ as: () => ctx });
  consoleError = vi.spyOn(console, 'error').mockImplementation(() => undefined);
});

afterEach(() => {
  consoleError.mockRestore();
});

const ROUTES: { method: HttpMethod; path: string; body?: unknown }[] = [
  { method: 'GET', path: '/v1/job-types' },
  { method: 'GET', path: '/v1/job-types/emails' },
  { method: 'GET', path: '/v1/stats' },
  { method: 'PUT', path: '/v1/job-types/emails', body: { target: { kind: 'handler', name: 'echo' } } },
  { method: 'POST', path: '/v1/jobs/emails', body: { data: 1 } },
  { method: 'PUT', path: '/v1/jobs/emails/job-1', body: { data: 1 } },
  { method: 'GET', path: '/v1/jobs/emails/job-1' },
  { method: 'POST', path: '/v1/jobs/emails/job-1', body: { status: 'succeeded', attempt: 1 } },
  { method: 'POST', path: '/v1/jobs/emails/job-1/heartbeat', body: { attempt: 1 } },
  { method: 'POST', path: '/v1/jobs/emails/job-1/replay' },
  { method: 'DELETE', path: '/v1/jobs/emails/job-1' },
];

describe('when DynamoDB fails', () => {
  test.each(ROUTES.map((route) => ({ ...route, name: `${route.method} ${route.path}` })))(
    '$name is a clean 500 internal',
    async ({ method, path, body }) => {
      const response = await api.request(method, path, body === undefined ? {} : { body });
      expect(response.status).toBe(500);
      expect(response.body).toEqual({
        error: { code: 'internal', message: expect.any(String), details: [], request_id: expect.any(String) },
      });
      expect(response.text).not.toContain('socket hang up');
      expect(response.text).not.toContain('ECONNRESET');
      expect(response.text).not.toContain('hunter2');
      expect(response.text).not.toContain('jobs-prod-7f3a');
      expect(leaksInternals(response.text)).toBe(false);
      expect(response.text).not.toContain('node_modules');
    },
  );

  test('the cause is logged with the request id, for the operator', async () => {
    const response = await api.get('/v1/jobs/emails/job-1');
    expect(response.status).toBe(500);
    const logged = consoleError.mock.calls.map((args) => args.map(String).join(' ')).join('\n');
    expect(logged).toContain('socket hang up');
    expect(logged).toContain(String(response.body.error.request_id));
  });

  test('GET /health still answers 200: it needs no store', async () => {
    const response = await api.get('/health', { token: null });
    expect(response.status).toBe(200);
    expect(dbMock.calls()).toHaveLength(0);
  });

  test('a request without a token is 401 before the store is touched', async () => {
    const response = await api.get('/v1/jobs/emails/job-1', { token: null });
    expect(response.status).toBe(401);
    expect(dbMock.calls()).toHaveLength(0);
  });

  test('an invalid job type body is 400 before the store is touched', async () => {
    const response = await api.put('/v1/job-types/emails', { target: { kind: 'handler', name: 'echo' }, attempts: 0 });
    expect(response.status).toBe(400);
    expect(dbMock.calls()).toHaveLength(0);
  });
});

describe('when DynamoDB is overloaded or unreachable for now', () => {
  const throttled = () => new ProvisionedThroughputExceededException({ message: `Throughput exceeded for table jobs-prod-7f3a`, $metadata: { httpStatusCode: 400 } });
  const timedOut = () => Object.assign(new Error('a request has exceeded the configured 1000 ms requestTimeout (jobs-prod-7f3a)'), { name: 'TimeoutError' });
  const refused = () => Object.assign(new Error('connect ECONNREFUSED 10.0.3.17:8000'), { code: 'ECONNREFUSED' });

  test.each([
    { cause: 'throttled', error: throttled },
    { cause: 'timed out', error: timedOut },
    { cause: 'refused', error: refused },
  ])('a $cause call is a 503 unavailable with Retry-After, saying nothing of the cause', async ({ error }) => {
    dbMock.onAnyCommand().rejects(error());
    const response = await api.put('/v1/jobs/emails/job-1', { data: 1 });
    expect(response.status).toBe(503);
    expect(response.headers['retry-after']).toBe('1');
    expect(response.body).toEqual({ error: { code: 'unavailable', message: expect.any(String), details: [], request_id: expect.any(String) } });
    expect(response.text).not.toContain('jobs-prod-7f3a');
    expect(response.text).not.toContain('10.0.3.17');
  });

  test('it is logged as a warning, not as an error with its stack', async () => {
    dbMock.onAnyCommand().rejects(throttled());
    await api.put('/v1/jobs/emails/job-1', { data: 1 });
    const logged = consoleError.mock.calls.map((args) => args.map(String).join(' ')).join('\n');
    expect(logged).toContain('"level":"WARN"');
    expect(logged).not.toContain('"level":"ERROR"');
    expect(logged).not.toContain('node_modules');
  });

  test('an item of a batch that met a throttled DynamoDB is a 503 of its own, to send again with its id', async () => {
    const jobType = jobTypeFromInput('emails', jobTypeInputSchema.parse({ target: { kind: 'handler', name: 'echo' } }), { createdAtMs: 0, updatedAtMs: 0 });
    dbMock.onAnyCommand().rejects(throttled());
    dbMock.on(GetCommand).resolves({ Item: putJobTypeParams(jobType, undefined).Item });
    const response = await api.post('/v1/jobs/emails/batch', { jobs: [{ id: 'a', data: 1 }] });
    expect(response.status).toBe(200);
    expect(response.body.results[0]).toMatchObject({ index: 0, id: 'a', status: 503, error: { code: 'unavailable', message: expect.stringContaining('may or may not') } });
  });
});
