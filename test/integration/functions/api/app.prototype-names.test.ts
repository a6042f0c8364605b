/**
 * Names from requests and data that are also the names of members every JavaScript object inherits
 * (`toString`, `__proto__`, `constructor`, `hasOwnProperty`...): as throttle keys, key_field values and
 * paths, limit keys, retry policies and type names they are names like any other, or a 400 naming the
 * field; they never find an inherited member, fail a poll, or leave a job running for good.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { requireJobType } from '../../../../lib/queue/catalog/job-types.js';
import type { JobHandler } from '../../../../lib/queue/attempt/run-batch.js';
import { jobTypeInputSchema } from '../../../../lib/wire/job-types.js';
import { freshApiPerTest, type ApiClient } from '../../../support/api.js';
import { hostileName } from '../../../support/hostile-names.js';
import type { TestQueue } from '../../../support/queue.js';
import { defineType, enqueue, poll, RunningInvoker } from '../../../support/lib-fixtures.js';

const api = freshApiPerTest();

const PROTOTYPE_NAMES = ['toString', '__proto__', 'constructor', 'hasOwnProperty', 'valueOf'] as const;

const echo: JobHandler = (data) => data;

/** Polls `type` and runs what it claims in-process until a poll claims nothing (at most `polls` times). */
async function runAll(queue: TestQueue, type: string, polls = 4): Promise<void> {
  const invoker = new RunningInvoker(queue.ctx, { echo });
  for (let pollNumber = 0; pollNumber < polls; pollNumber++) {
    const result = await poll(queue.ctx, [await requireJobType(queue.ctx, type)], invoker);
    expect(invoker.errors).toEqual([]);
    if (result.claimed === 0) return;
  }
}

async function statusOf(client: ApiClient, type: string, id: string): Promise<string> {
  const response = await client.get(`/v1/jobs/${type}/${id}`);
  expect(response.status).toBe(200);
  return response.body.status;
}

const THROTTLED = { target: { kind: 'handler', name: 'echo' }, concurrency: 5, throttle: { key_field: 'region', limits: { east: { limit: 2 } } } };

describe.each(PROTOTYPE_NAMES)('a job whose throttle key is "%s"', (name) => {
  test('given as throttle_key, runs, and so do the other jobs of its type', async () => {
    const { queue, api: client } = api();
    expect((await client.put('/v1/job-types/regional', THROTTLED)).status).toBe(201);
    expect((await client.put('/v1/jobs/regional/hostile', { data: {}, throttle_key: name })).body.throttle_key).toBe(name);
    expect((await client.put('/v1/jobs/regional/normal', { data: { region: 'east' } })).status).toBe(201);
    await runAll(queue, 'regional');
    expect(await statusOf(client, 'regional', 'hostile')).toBe('succeeded');
    expect(await statusOf(client, 'regional', 'normal')).toBe('succeeded');
  });

  test('taken from its data through key_field, runs, and so do the other jobs of its type', async () => {
    const { queue, api: client } = api();
    expect((await client.put('/v1/job-types/regional', THROTTLED)).status).toBe(201);
    expect((await client.put('/v1/jobs/regional/hostile', { data: { region: name } })).body.throttle_key).toBe(name);
    expect((await client.put('/v1/jobs/regional/normal', { data: { region: 'east' } })).status).toBe(201);
    await runAll(queue, 'regional');
    expect(await statusOf(client, 'regional', 'hostile')).toBe('succeeded');
    expect(await statusOf(client, 'regional', 'normal')).toBe('succeeded');
  });
});

describe.each(['hasOwnProperty', 'toString', 'constructor', '__proto__', 'valueOf'])('a retry policy named "%s"', (name) => {
  test('is refused with 400 naming retry.name, as any policy the worker does not have', async () => {
    const { api: client } = api();
    const response = await client.put('/v1/job-types/emails', { target: { kind: 'handler', name: 'fail' }, retry: { kind: 'custom', name } });
    expect(response.status).toBe(400);
    expect(response.body.error.details).toEqual([expect.objectContaining({ field: 'retry.name' })]);
    expect((await client.get('/v1/job-types/emails')).status).toBe(404);
  });
});

// Called unbound, these two throw, so the attempt could never be ended; the others returned a non-decision.
describe.each(['hasOwnProperty', 'valueOf'])('a type stored naming a retry policy "%s" the worker lacks', (name) => {
  test('fails its failing job instead of leaving it running', async () => {
    const { queue } = api();
    const jobType = await defineType(queue.ctx, 'emails', { retry: { kind: 'custom', name }, attempts: 3 });
    await enqueue(queue.ctx, jobType, 'e1');
    const invoker = new RunningInvoker(queue.ctx, { emails: () => { throw new Error('smtp down'); } });
    await poll(queue.ctx, [jobType], invoker);
    expect(invoker.errors).toEqual([]);
    const job = await api().api.get('/v1/jobs/emails/e1');
    expect(job.body).toMatchObject({ status: 'failed', history: [expect.objectContaining({ outcome: 'failed' })] });
  });
});

describe('a throttle limit keyed "constructor"', () => {
  const name = 'constructor';
  test('is stored, returned, and limits the jobs with that key', async () => {
    const { queue, api: client } = api();
    const body = { target: { kind: 'handler', name: 'echo' }, concurrency: 5, throttle: { limits: { [name]: { limit: 1 }, '*': { limit: 3 } } } };
    expect((await client.put('/v1/job-types/regional', body)).status).toBe(201);
    expect((await client.get('/v1/job-types/regional')).body.throttle.limits).toEqual({ [name]: { limit: 1 }, '*': { limit: 3 } });
    for (const id of ['a', 'b', 'c']) expect((await client.put(`/v1/jobs/regional/${id}`, { data: {}, throttle_key: name })).status).toBe(201);
    // The invoker records and runs nothing, so the claimed jobs keep their slots: only the limit's one is taken.
    const claimed = await poll(queue.ctx, [await requireJobType(queue.ctx, 'regional')], { invoke: async () => undefined });
    expect(claimed.claimed).toBe(1);
  });
});

test('the job type schema refuses a limit keyed "__proto__", naming it, rather than drop it', () => {
  const body = JSON.parse('{"target": {"kind": "handler", "name": "echo"}, "throttle": {"limits": {"__proto__": {"limit": 1}, "east": {"limit": 2}}}}');
  const parsed = jobTypeInputSchema.safeParse(body);
  expect(parsed.success).toBe(false);
  expect(parsed.error?.issues).toEqual([expect.objectContaining({ path: ['throttle', 'limits', '__proto__'] })]);
});

test('over HTTP, a throttle limit keyed "__proto__" is 400 naming throttle.limits.__proto__, and stores nothing', async () => {
  const { api: client } = api();
  const body = '{"target": {"kind": "handler", "name": "echo"}, "throttle": {"limits": {"__proto__": {"limit": 1}, "east": {"limit": 2}}}}';
  const response = await client.put('/v1/job-types/regional', body);
  expect(response.status).toBe(400);
  expect(response.body.error.details).toEqual([expect.objectContaining({ field: 'throttle.limits.__proto__' })]);
  expect((await client.get('/v1/job-types/regional')).status).toBe(404);
});

test.each(['constructor', 'toString', 'hasOwnProperty'])('a job type named "%s" runs its jobs', async (name) => {
  const { queue, api: client } = api();
  expect((await client.put(`/v1/job-types/${name}`, { target: { kind: 'handler', name: 'echo' } })).status).toBe(201);
  expect((await client.put(`/v1/jobs/${name}/j1`, { data: { n: 1 } })).status).toBe(201);
  await runAll(queue, name);
  expect(await statusOf(client, name, 'j1')).toBe('succeeded');
});

/** Every byte of the name's UTF-8 %-escaped, so any name, a lone surrogate's replacement too, makes a path. */
const pathSegment = (name: string): string => [...Buffer.from(name, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');

test('names from a hostile alphabet as throttle key, key_field value, limit key, policy name and type name get 2xx or 4xx, never stalling a type', async () => {
  const { queue, api: client } = api();
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.record({ throttleKey: hostileName, keyValue: hostileName, limitKey: hostileName, policy: hostileName, typeName: hostileName }), async (names) => {
      const type = `t${++run}`;
      const answers: { request: string; status: number }[] = [];
      const send = async (request: string, answer: Promise<{ status: number }>) => {
        const { status } = await answer;
        answers.push({ request, status });
        return status;
      };
      const typeBody = (limits: Record<string, unknown>) => ({ target: { kind: 'handler', name: 'echo' }, concurrency: 10, throttle: { key_field: 'region', limits } });
      const withHostileLimit = await send('type with the limit key', client.put(`/v1/job-types/${type}`, typeBody({ [names.limitKey]: { limit: 2 }, normal: { limit: 5 } })));
      if (withHostileLimit >= 400) expect(await send('type without it', client.put(`/v1/job-types/${type}`, typeBody({ normal: { limit: 5 } })))).toBe(201);
      await send('type with the policy', client.put(`/v1/job-types/${type}-policy`, { target: { kind: 'handler', name: 'echo' }, retry: { kind: 'custom', name: names.policy } }));
      const accepted: string[] = [];
      if ((await send('throttle_key', client.put(`/v1/jobs/${type}/by-key`, { data: {}, throttle_key: names.throttleKey }))) === 201) accepted.push('by-key');
      if ((await send('key_field value', client.put(`/v1/jobs/${type}/by-data`, { data: { region: names.keyValue } }))) === 201) accepted.push('by-data');
      expect(await send('normal job', client.put(`/v1/jobs/${type}/normal`, { data: { region: 'normal' } }))).toBe(201);
      const named = pathSegment(names.typeName);
      const namedTypeCreated = (await send('type name', client.put(`/v1/job-types/${named}`, { target: { kind: 'handler', name: 'echo' } }))) < 300;
      if (namedTypeCreated) expect(await send('job of the named type', client.put(`/v1/jobs/${named}/${type}`, { data: {} }))).toBe(201);
      expect(answers.filter(({ status }) => status >= 500 || status < 200)).toEqual([]);
      await runAll(queue, type);
      for (const id of ['normal', ...accepted]) expect({ id, status: await statusOf(client, type, id) }).toEqual({ id, status: 'succeeded' });
      if (namedTypeCreated) {
        await runAll(queue, names.typeName);
        expect(await statusOf(client, named, type)).toBe('succeeded');
      }
    }),
    { numRuns: 40, seed: Number(process.env.FC_SEED ?? Date.now() % 2 ** 31) },
  );
}, 240_000);
