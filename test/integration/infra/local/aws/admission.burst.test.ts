/**
 * A burst against the local runtime degrades as the deployed system does: what
 * the api cannot serve at once waits, and past its queue is refused with 429
 * and Retry-After before anything runs, never a 500; a client that retries
 * gets every job in, and every job runs exactly once.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { freePort } from '../../../../../infra/local/aws/dynamodb-local.js';
import { startLocalRuntime, type LocalRuntime } from '../../../../../infra/local/runtime.js';
import { createClient } from '../../../../../lib/client/index.js';
import { eventually } from '../../../../support/eventually.js';

const BURST = 300;
let runtime: LocalRuntime;
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'djq-admission-'));
  runtime = await startLocalRuntime({
    DYNAMODB_ENDPOINT: inject('dynamoEndpoint'),
    TABLE_NAME: `admission-${Date.now()}`,
    PORT: String(await freePort()),
    DATA_DIR: dataDir,
    POLL_INTERVAL_MS: '200',
    SWEEP_INTERVAL_MS: '1000',
    LOCAL_API_CONCURRENCY: '2',
    LOCAL_API_QUEUE: '10',
  });
});

afterAll(async () => {
  await runtime?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

const put = (path: string, body: unknown) =>
  fetch(`${runtime.url}${path}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${runtime.adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

test(`${BURST} enqueues at once to an api serving 2 with 10 waiting: each is served or refused with 429 and Retry-After, a refused one stores nothing, and a retrying client gets all in, each run once`, async () => {
  expect((await put('/v1/job-types/burst', { target: { kind: 'handler', name: 'echo' } })).status).toBe(201);
  const runAfter = new Date(Date.now() + 2_000).toISOString();
  const ids = Array.from({ length: BURST }, (_, i) => `b-${i}`);

  // Bodies of 40 KB (echoed back under the 64 KiB result cap), so serving one takes far longer than the next takes to arrive.
  const dataOf = (id: string) => ({ id, padding: 'x'.repeat(40_000) });
  const answers = await Promise.all(ids.map(async (id) => ({ id, response: await put(`/v1/jobs/burst/${id}`, { data: dataOf(id), run_after: runAfter }) })));
  const statuses = answers.map(({ response }) => response.status);
  // 200: a try the SDK sent again after its first landed unseen finds the same job; 503: DynamoDB Local overloaded.
  expect(statuses.filter((status) => ![200, 201, 429, 503].includes(status))).toEqual([]);
  const refused = answers.filter(({ response }) => response.status === 429);
  expect(refused.length).toBeGreaterThan(0);
  for (const { response } of refused) {
    expect(response.headers.get('retry-after')).toBe('1');
    expect(await response.json()).toEqual({ message: 'Too Many Requests' });
  }

  const client = createClient({ url: runtime.url, token: runtime.adminKey, retries: 20 });
  for (const { id } of refused) {
    await expect(client.get('burst', id)).rejects.toMatchObject({ status: 404 });
  }
  const enqueued = await Promise.all(ids.map((id) => client.enqueue('burst', { data: dataOf(id), run_after: runAfter }, { id })));
  expect(enqueued.map((job) => job.id).sort()).toEqual([...ids].sort());

  const succeeded = () => runtime.lifecycleEvents.filter((event) => event.type === 'burst' && event.name === 'job.succeeded');
  await eventually(async () => succeeded().length, (count) => count >= BURST, 120_000, 250);
  const attemptsById = new Map<string, number[]>();
  for (const event of succeeded()) attemptsById.set(event.id, [...(attemptsById.get(event.id) ?? []), event.attempt]);
  expect([...attemptsById.keys()].sort()).toEqual([...ids].sort());
  expect([...attemptsById.values()].every((attempts) => attempts.length === 1 && attempts[0] === 1)).toBe(true);
  expect(runtime.lifecycleEvents.filter((event) => event.type === 'burst' && event.name !== 'job.succeeded')).toEqual([]);
}, 180_000);
