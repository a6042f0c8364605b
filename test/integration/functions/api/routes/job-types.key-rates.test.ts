/**
 * `throttle.limits[<key>].rate_per_s` over HTTP: stored and answered as sent, and every bad value a 400 naming
 * its field that stores nothing; the type's own `rate_limit_per_s` within the same bounds.
 */
import { expect, test } from 'vitest';
import { freshApiPerTest } from '../../../../support/api.js';

const api = freshApiPerTest();

const typeWithLimits = (limits: string): string => `{"target": {"kind": "handler", "name": "echo"}, "concurrency": 10, "throttle": {"key_field": "customer", "limits": ${limits}}}`;

test('a key may have a rate alone, beside a limit or a share, and "*" a rate for every key not named: stored and answered as sent', async () => {
  const { api: client } = api();
  const limits = { east: { rate_per_s: 10 }, west: { limit: 3, rate_per_s: 0.5 }, north: { share: 0.5, rate_per_s: 2 }, south: { limit: 1 }, '*': { rate_per_s: 1 } };
  const created = await client.put('/v1/job-types/exports', typeWithLimits(JSON.stringify(limits)));
  expect(created.status).toBe(201);
  expect(created.body.throttle.limits).toEqual(limits);
  expect((await client.get('/v1/job-types/exports')).body.throttle.limits).toEqual(limits);
});

test('a rate keyed "constructor" is stored and answered like any other', async () => {
  const { api: client } = api();
  const response = await client.put('/v1/job-types/exports', typeWithLimits('{"constructor": {"rate_per_s": 4}}'));
  expect(response.status).toBe(201);
  expect((await client.get('/v1/job-types/exports')).body.throttle.limits).toEqual({ constructor: { rate_per_s: 4 } });
});

test.each([
  ['a rate of 0', '{"east": {"rate_per_s": 0}}', 'throttle.limits.east.rate_per_s'],
  ['a negative rate', '{"east": {"rate_per_s": -1}}', 'throttle.limits.east.rate_per_s'],
  ['a rate above 100 000 a second', '{"east": {"rate_per_s": 1e9}}', 'throttle.limits.east.rate_per_s'],
  ['a rate too small to store (1e-300)', '{"east": {"rate_per_s": 1e-300}}', 'throttle.limits.east.rate_per_s'],
  ['a rate given as a string', '{"east": {"rate_per_s": "5"}}', 'throttle.limits.east.rate_per_s'],
  ['a rate of null', '{"east": {"rate_per_s": null}}', 'throttle.limits.east.rate_per_s'],
  ['an entry with nothing in it', '{"east": {}}', 'throttle.limits.east'],
  ['an entry with both a limit and a share', '{"east": {"limit": 1, "share": 0.5, "rate_per_s": 1}}', 'throttle.limits.east.share'],
  ['an entry with a field of its own', '{"east": {"rate_per_s": 1, "burst": 5}}', 'throttle.limits.east.burst'],
  ['a rate keyed "__proto__"', '{"__proto__": {"rate_per_s": 1}}', 'throttle.limits.__proto__'],
  ['a rate keyed with 129 characters', `{"${'k'.repeat(129)}": {"rate_per_s": 1}}`, `throttle.limits.${'k'.repeat(129)}`],
])('%s is a 400 naming the field, and stores nothing', async (_name, limits, field) => {
  const { api: client } = api();
  const response = await client.put('/v1/job-types/exports', typeWithLimits(limits));
  expect(response.status).toBe(400);
  expect(response.body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
  expect((await client.get('/v1/job-types/exports')).status).toBe(404);
});

test('a rate keyed "" is a 400 naming throttle.limits, and stores nothing', async () => {
  const { api: client } = api();
  const response = await client.put('/v1/job-types/exports', typeWithLimits('{"": {"rate_per_s": 1}}'));
  expect(response.status).toBe(400);
  expect(response.body.error.details).toEqual([expect.objectContaining({ field: expect.stringMatching(/^throttle\.limits/) })]);
  expect((await client.get('/v1/job-types/exports')).status).toBe(404);
});

test('a bad rate in a replacement leaves the stored type as it was', async () => {
  const { api: client } = api();
  expect((await client.put('/v1/job-types/exports', typeWithLimits('{"east": {"rate_per_s": 5}}'))).status).toBe(201);
  expect((await client.put('/v1/job-types/exports', typeWithLimits('{"east": {"rate_per_s": 0}}'))).status).toBe(400);
  expect((await client.get('/v1/job-types/exports')).body.throttle.limits).toEqual({ east: { rate_per_s: 5 } });
});

test.each([
  ['too small to store (1e-300)', 1e-300],
  ['below a start in about 12 days', 1e-7],
])('a type rate %s is a 400 naming rate_limit_per_s, not a 500, and stores nothing', async (_name, ratePerS) => {
  const { api: client } = api();
  const response = await client.put('/v1/job-types/exports', JSON.stringify({ target: { kind: 'handler', name: 'echo' }, rate_limit_per_s: ratePerS }));
  expect(response.status).toBe(400);
  expect(response.body.error.details).toEqual([expect.objectContaining({ field: 'rate_limit_per_s' })]);
  expect((await client.get('/v1/job-types/exports')).status).toBe(404);
});
