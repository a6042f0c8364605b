/**
 * Every route the api serves, driven over HTTP with names from a hostile alphabet in each path parameter and in
 * the name-like fields of bodies and queries (throttle key, correlation key, schedule, policy and limit names,
 * cursor, status...), with an admin key and with a key scoped to the type alone: each answer is a 2xx or a 4xx,
 * never a 5xx or a dropped connection, and afterwards no type is left with jobs that never run.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import type { z } from 'zod';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { freePort } from '../../../../infra/local/aws/dynamodb-local.js';
import { startLocalRuntime, type LocalRuntime } from '../../../../infra/local/runtime.js';
import { OPERATIONS } from '../../../../functions/api/operations.js';
import { DASHBOARD_PATHS } from '../../../../functions/shared/public-paths.js';
import { SCOPE_ACTIONS } from '../../../../lib/domain/api-key.js';
import { JOB_STATUSES } from '../../../../lib/domain/job.js';
import { hostileName } from '../../../support/hostile-names.js';
import { rawRequest } from '../../../support/raw-http.js';
import { eventually } from '../../../support/eventually.js';

type Operation = (typeof OPERATIONS)[number];
type BodyRoute = Extract<Operation, { body: z.ZodType }>['route'];
type QueryRoute = Extract<Operation, { query: z.ZodType }>['route'];

/**
 * Half the time a member every object inherits that is also a well-formed name, so a run reaches past validation
 * to the types, jobs and schedules it names; else any hostile name.
 */
const hostileOrMember = fc.oneof(hostileName, fc.constantFrom('toString', 'constructor', 'valueOf', 'hasOwnProperty', 'isPrototypeOf', 'propertyIsEnumerable', 'toLocaleString', 'prototype', 'length', 'name'));
/** Query values that pass validation half the time, so the names beside them are what decides the answer. */
const hostileStatus = fc.oneof(hostileName, fc.constantFrom(...JOB_STATUSES));
const hostileCount = fc.oneof(hostileName, fc.constantFrom('1', '10', '60'));

const hostileNames = fc.record({
  type: hostileOrMember,
  id: hostileOrMember,
  schedule: hostileOrMember,
  correlationKey: hostileOrMember,
  keyId: hostileName,
  operationId: hostileName,
  /** Any other path parameter a route may grow. */
  other: hostileName,
  throttleKey: hostileOrMember,
  keyFieldValue: hostileOrMember,
  limitKey: hostileOrMember,
  policy: hostileOrMember,
  /** Whether the type names the retry policy: a policy the worker lacks is refused, so half the types are made without. */
  withPolicy: fc.boolean(),
  keyName: hostileName,
  cursor: fc.option(hostileName),
  status: hostileStatus,
  count: hostileCount,
  /** The hostile `%`-escapes go out as written when true, every byte escaped when false. */
  raw: fc.boolean(),
});

type HostileNames = typeof hostileNames extends fc.Arbitrary<infer T> ? T : never;

/** The name each path parameter takes, by the collection it sits under. */
const PATH_NAMES: ReadonlyMap<string, (names: HostileNames) => string> = new Map([
  ['job-types/name', (names) => names.type],
  ['jobs/type', (names) => names.type],
  ['jobs/id', (names) => names.id],
  ['callbacks/correlation_key', (names) => names.correlationKey],
  ['operations/id', (names) => names.operationId],
  ['keys/id', (names) => names.keyId],
  ['schedules/name', (names) => names.schedule],
]);

/** Printable ASCII other than the separators a path or query gives meaning to goes out as written; the rest as UTF-8 escapes. */
const AS_WRITTEN = /^[\x21-\x7e]$/u;
const SEPARATORS = new Set(['/', '?', '#', '&', '=', '+']);
const escaped = (text: string): string => [...Buffer.from(text, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');

function encoded(name: string, raw: boolean): string {
  if (!raw) return escaped(name);
  return [...name].map((char) => (AS_WRITTEN.test(char) && !SEPARATORS.has(char) ? char : escaped(char))).join('');
}

function pathOf(template: string, names: HostileNames): string {
  const collection = template.split('/').at(template.startsWith('/v1/') ? 2 : 1);
  return template.replace(/\{([a-z_]+)\}/gu, (_, param: string) => encoded((PATH_NAMES.get(`${collection}/${param}`) ?? ((n) => n.other))(names), names.raw));
}

const typeBody = (names: HostileNames) => ({
  target: { kind: 'handler', name: 'echo' },
  concurrency: 10,
  throttle: { key_field: 'region', limits: { [names.limitKey]: { limit: 2 }, normal: { limit: 5 } } },
  ...(names.withPolicy ? { retry: { kind: 'custom', name: names.policy } } : {}),
});
const jobBody = (names: HostileNames) => ({ data: { region: names.keyFieldValue }, throttle_key: names.throttleKey, correlation_key: names.correlationKey });

/** The body each route with one is sent: its name-like fields hostile, the rest valid, so the names are what is tested. */
const BODIES: { readonly [R in BodyRoute]: (names: HostileNames) => unknown } = {
  putJobType: typeBody,
  enqueueWithServerId: (names) => ({ data: { region: names.keyFieldValue }, throttle_key: names.throttleKey }),
  enqueueBatch: (names) => ({ jobs: [{ id: names.id, ...jobBody(names) }, { data: { region: names.keyFieldValue } }] }),
  startBulk: (names) => ({ action: 'cancel', status: 'queued', throttle_key: names.throttleKey }),
  enqueueWithId: jobBody,
  callback: () => ({ status: 'succeeded', attempt: 1 }),
  changeJob: () => ({ priority: 7 }),
  heartbeat: () => ({ attempt: 1 }),
  callbackByCorrelationKey: () => ({ status: 'failed', error: { class: 'Hostile', message: 'from the property test' } }),
  jobberQueue: (names) => ({ type: names.type, payload: { region: names.keyFieldValue } }),
  createKey: (names) => ({ scopes: [`read:${names.type}`], name: names.keyName }),
  putSchedule: (names) => ({ cron: '0 0 1 1 *', job_type: names.type, throttle_key: names.throttleKey }),
};

const cursorOf = (names: HostileNames): Record<string, string> => (names.cursor === null ? {} : { cursor: names.cursor });

const QUERIES: { readonly [R in QueryRoute]: (names: HostileNames) => Record<string, string> } = {
  metrics: (names) => ({ minutes: names.count }),
  listJobs: (names) => ({ status: names.status, limit: names.count, ...cursorOf(names) }),
  listSchedules: (names) => ({ limit: names.count, ...cursorOf(names) }),
};

const queryOf = (fields: Record<string, string> | undefined, raw: boolean): string =>
  fields === undefined ? '' : `?${Object.entries(fields).map(([field, value]) => `${field}=${encoded(value, raw)}`).join('&')}`;

interface HostileRequest {
  method: string;
  path: string;
  body?: string;
}

/** Every route of the router with the run's names, in the order OPERATIONS lists them, then the dashboard's pages. */
function requestsFor(names: HostileNames): HostileRequest[] {
  const requests = OPERATIONS.map((operation): HostileRequest => {
    const query = Object.hasOwn(QUERIES, operation.route) ? QUERIES[operation.route as QueryRoute](names) : undefined;
    const body = Object.hasOwn(BODIES, operation.route) ? BODIES[operation.route as BodyRoute](names) : undefined;
    return {
      method: operation.method,
      path: pathOf(operation.path, names) + queryOf(query, names.raw),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    };
  });
  const dashboard = Object.values(DASHBOARD_PATHS).map((path) => ({ method: 'GET', path: path + queryOf({ type: names.type, ...cursorOf(names) }, names.raw) }));
  return [...requests, ...dashboard];
}

let dataDir: string;
let runtime: LocalRuntime;
/** A key for the steady type alone: the narrow key of a run whose type name no key can be scoped to. */
let steadyKey: string;
const tableName = `hostile-routes-${randomUUID()}`;
/** Every hostile type a run created, to see its jobs all run. */
const createdTypes = new Set<string>();

async function call(method: string, path: string, key: string, body?: unknown) {
  const answer = await rawRequest(
    runtime.url,
    method,
    path,
    { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body === undefined ? undefined : JSON.stringify(body),
  );
  return { status: answer.status, body: answer.text.length > 0 ? JSON.parse(answer.text) : undefined };
}

/** Reads `path` until `done` holds of its answer, answering the last one read after 30 s. */
const readUntil = (path: string, done: (answer: { status: number; body: any }) => boolean) => eventually(() => call('GET', path, runtime.adminKey), done, 30_000, 200);

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'djq-hostile-routes-'));
  runtime = await startLocalRuntime({
    DYNAMODB_ENDPOINT: inject('dynamoEndpoint'),
    TABLE_NAME: tableName,
    PORT: String(await freePort()),
    DATA_DIR: dataDir,
    POLL_INTERVAL_MS: '200',
  });
  expect((await call('PUT', '/v1/job-types/steady', runtime.adminKey, { target: { kind: 'handler', name: 'echo' } })).status).toBe(201);
  const created = await call('POST', '/v1/keys', runtime.adminKey, { scopes: SCOPE_ACTIONS.map((action) => `${action}:steady`) });
  expect(created.status).toBe(201);
  steadyKey = created.body.key;
}, 120_000);

afterAll(async () => {
  await runtime?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

describe('every route with hostile names', () => {
  test('answers 2xx or 4xx, never 5xx nor a dropped connection, to an admin key and to a key scoped to the type', async () => {
    const seed = Number(process.env.FC_SEED ?? 28);
    await fc.assert(
      fc.asyncProperty(hostileNames, async (names) => {
        // The narrow key: every action on the run's type alone, when the name makes a scope; else the steady type's key.
        const scoped = await call('POST', '/v1/keys', runtime.adminKey, { scopes: SCOPE_ACTIONS.map((action) => `${action}:${names.type}`) });
        const narrowKey: string = scoped.status === 201 ? scoped.body.key : steadyKey;
        const unexpected: { who: string; request: HostileRequest; status: number | string }[] = [];
        for (const request of requestsFor(names)) {
          for (const [who, key] of [['admin', runtime.adminKey], ['narrow', narrowKey]] as const) {
            const headers: Record<string, string> = { authorization: `Bearer ${key}`, ...(request.body === undefined ? {} : { 'content-type': 'application/json' }) };
            const status = await rawRequest(runtime.url, request.method, request.path, headers, request.body).then(
              (answer) => answer.status,
              (error: Error) => `dropped: ${error.message}`,
            );
            if (typeof status === 'string' || status < 200 || status >= 500 || (status >= 300 && status < 400)) unexpected.push({ who, request, status });
            if (request.method === 'PUT' && request.path.startsWith('/v1/job-types/') && typeof status === 'number' && status < 300) createdTypes.add(names.type);
          }
        }
        expect(unexpected).toEqual([]);
      }),
      { numRuns: 25, seed },
    );
  }, 240_000);

  test('afterwards a normal job of a normal type still runs', async () => {
    expect((await call('PUT', '/v1/jobs/steady/after-the-storm', runtime.adminKey, { data: { n: 1 } })).status).toBe(201);
    const job = await readUntil('/v1/jobs/steady/after-the-storm', (answer) => answer.body?.status === 'succeeded');
    expect(job.body.status).toBe('succeeded');
  }, 60_000);

  test('afterwards no hostile type that was created is left with a job that never runs', async () => {
    expect(createdTypes.size).toBeGreaterThan(0);
    for (const type of createdTypes) {
      for (const status of ['queued', 'running'] as const) {
        const page = await readUntil(`/v1/jobs/${escaped(type)}?status=${status}`, (answer) => answer.body?.jobs?.length === 0);
        expect({ type, status, jobs: page.body.jobs }).toEqual({ type, status, jobs: [] });
      }
    }
  }, 120_000);

  test('afterwards the runtime still answers, publicly and with a key', async () => {
    expect((await rawRequest(runtime.url, 'GET', '/health', {})).status).toBe(200);
    expect((await call('GET', '/v1/job-types/steady', steadyKey)).status).toBe(200);
  });
});
