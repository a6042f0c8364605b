import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, expect, test } from 'vitest';
import { createQueueContext } from '../../../../../lib/queue/context.js';
import { readQueueSettings } from '../../../../../lib/queue/settings.js';
import { createJobTypeCache, createSigningSecretCache, MAX_CACHED_JOB_TYPES } from '../../../../../lib/queue/catalog/job-type-cache.js';
import { JOB_TYPES_REFRESH_MS } from '../../../../../lib/queue/catalog/job-types.js';
import { NotFoundError } from '../../../../../lib/domain/errors.js';
import { jobTypeKey } from '../../../../../lib/store/keys.js';
import { T0 } from '../../../../support/jobs.js';

const db = mockClient(DynamoDBDocumentClient);
let nowMs = T0;
const ctx = createQueueContext(DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'eu-west-1' })), readQueueSettings({ TABLE_NAME: 'jobs' }), {
  nowMs: () => nowMs,
});

/** The type items the table holds, by type name. */
const stored = new Map<string, Record<string, unknown>>();
const reads = (type: string): number => db.commandCalls(GetCommand, { Key: jobTypeKey(type) }).length;

beforeEach(() => {
  db.reset();
  stored.clear();
  nowMs = T0;
  db.on(GetCommand).callsFake(async (input: { Key: { pk: string } }) => ({ Item: stored.get(input.Key.pk.slice('TYPE#'.length)) }));
});

test("a type's secret is read from its item, consistently, once for every job that asks within the cache period", async () => {
  stored.set('emails', { name: 'emails', signingSecret: 'whsec_one' });
  const secrets = createSigningSecretCache(ctx);
  expect(await secrets.get('emails')).toBe('whsec_one');
  nowMs += JOB_TYPES_REFRESH_MS - 1;
  expect(await secrets.get('emails')).toBe('whsec_one');
  expect(reads('emails')).toBe(1);
  expect(db.commandCalls(GetCommand)[0]?.args[0].input).toMatchObject({ TableName: 'jobs', Key: jobTypeKey('emails'), ConsistentRead: true });
});

test('a secret changed in the item is read again once the cache period has passed', async () => {
  stored.set('emails', { name: 'emails', signingSecret: 'whsec_one' });
  const secrets = createSigningSecretCache(ctx);
  await secrets.get('emails');
  stored.set('emails', { name: 'emails', signingSecret: 'whsec_two' });
  nowMs += JOB_TYPES_REFRESH_MS;
  expect(await secrets.get('emails')).toBe('whsec_two');
});

test('jobs of one type asking at once share one read', async () => {
  stored.set('emails', { name: 'emails', signingSecret: 'whsec_one' });
  const secrets = createSigningSecretCache(ctx);
  expect(await Promise.all([secrets.get('emails'), secrets.get('emails'), secrets.get('emails')])).toEqual(['whsec_one', 'whsec_one', 'whsec_one']);
  expect(reads('emails')).toBe(1);
});

test('a type whose item is gone, or holds no secret, has none', async () => {
  stored.set('plain', { name: 'plain' });
  const secrets = createSigningSecretCache(ctx);
  expect(await secrets.get('plain')).toBeUndefined();
  expect(await secrets.get('deleted')).toBeUndefined();
});

test('a read that fails is not kept: the next job reads the item again', async () => {
  stored.set('emails', { name: 'emails', signingSecret: 'whsec_one' });
  db.on(GetCommand).rejectsOnce(new Error('throttled')).callsFake(async () => ({ Item: stored.get('emails') }));
  const secrets = createSigningSecretCache(ctx);
  await expect(secrets.get('emails')).rejects.toThrow('throttled');
  expect(await secrets.get('emails')).toBe('whsec_one');
  expect(reads('emails')).toBe(2);
});

test(`the cache holds at most ${MAX_CACHED_JOB_TYPES} types: past that, the one read longest ago is read again`, async () => {
  const names = Array.from({ length: MAX_CACHED_JOB_TYPES + 1 }, (_, i) => `type-${i}`);
  for (const name of names) stored.set(name, { name, signingSecret: `whsec_${name}` });
  const secrets = createSigningSecretCache(ctx);
  for (const name of names) await secrets.get(name);
  await secrets.get(names[1]!);
  expect(reads(names[1]!)).toBe(1);
  await secrets.get(names[0]!);
  expect(reads(names[0]!)).toBe(2);
});

test('a type that does not exist is not kept: once made, it is found at once', async () => {
  const types = createJobTypeCache(ctx);
  await expect(types.require('emails')).rejects.toThrow(NotFoundError);
  stored.set('emails', { name: 'emails' });
  expect((await types.require('emails')).name).toBe('emails');
});

test('a type this process changed is acted on at once, without a read', async () => {
  stored.set('emails', { name: 'emails', attempts: 3 });
  const types = createJobTypeCache(ctx);
  const read = await types.require('emails');
  types.keep({ ...read, attempts: 5 });
  expect((await types.require('emails')).attempts).toBe(5);
  expect(reads('emails')).toBe(1);
});
