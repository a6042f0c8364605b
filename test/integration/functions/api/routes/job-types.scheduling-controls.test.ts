/** The scheduling controls as the HTTP API takes and returns them (docs/reference/http-api.md). */
import { describe, expect, test } from 'vitest';
import { freshApiPerTest } from '../../../../support/api.js';

const api = freshApiPerTest();

const CONTROLLED = {
  target: { kind: 'handler', name: 'echo' },
  concurrency: 10,
  rate_limit_per_s: 2.5,
  priority_order: 'priority_first',
  throttle: { key_field: 'customer.region', limits: { east: { share: 0.4 }, '*': { limit: 2 } } },
};

describe('job type controls', () => {
  test('a type stores and returns its concurrency, rate limit, priority order and throttle', async () => {
    const { api: client } = api();
    const created = await client.put('/v1/job-types/regional', CONTROLLED);
    expect(created.status).toBe(201);
    const read = await client.get('/v1/job-types/regional');
    expect(read.body).toMatchObject({
      concurrency: 10,
      rate_limit_per_s: 2.5,
      priority_order: 'priority_first',
      throttle: { key_field: 'customer.region', limits: { east: { share: 0.4 }, '*': { limit: 2 } } },
    });
  });

  test('a type without controls returns them as unlimited', async () => {
    const { api: client } = api();
    const created = await client.put('/v1/job-types/plain', { target: { kind: 'handler', name: 'echo' } });
    expect(created.body).toMatchObject({ concurrency: null, rate_limit_per_s: null, priority_order: 'time_first', throttle: null });
  });

  test('a share without a concurrency is 400 naming the share', async () => {
    const { api: client } = api();
    const response = await client.put('/v1/job-types/regional', { ...CONTROLLED, concurrency: null });
    expect(response.status).toBe(400);
    expect(response.body.error.details).toEqual([expect.objectContaining({ field: 'throttle.limits.east.share' })]);
  });
});

describe('job controls', () => {
  test('a job takes its throttle key from the type key_field and returns it', async () => {
    const { api: client } = api();
    await client.put('/v1/job-types/regional', CONTROLLED);
    const response = await client.put('/v1/jobs/regional/job-1', { data: { customer: { region: 'east' } }, priority: 5, weight: 3 });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ priority: 5, weight: 3, throttle_key: 'east' });
  });

  test('a job given a throttle_key keeps it', async () => {
    const { api: client } = api();
    await client.put('/v1/job-types/regional', CONTROLLED);
    const response = await client.post('/v1/jobs/regional', { data: {}, throttle_key: 'tenant-42' });
    expect(response.body).toMatchObject({ throttle_key: 'tenant-42' });
  });

  test('a weight above the type concurrency is 400 naming weight, and stores nothing', async () => {
    const { api: client } = api();
    await client.put('/v1/job-types/regional', CONTROLLED);
    const response = await client.put('/v1/jobs/regional/job-1', { weight: 11 });
    expect(response.status).toBe(400);
    expect(response.body.error.details).toEqual([expect.objectContaining({ field: 'weight' })]);
    expect((await client.get('/v1/jobs/regional/job-1')).status).toBe(404);
  });

  test('the same job with another throttle_key is 409', async () => {
    const { api: client } = api();
    await client.put('/v1/job-types/regional', CONTROLLED);
    await client.put('/v1/jobs/regional/job-1', { throttle_key: 'a' });
    expect((await client.put('/v1/jobs/regional/job-1', { throttle_key: 'b' })).status).toBe(409);
  });
});
