/**
 * Hostile and malformed requests against the local runtime over HTTP, in
 * order, each with the status and error code it must get. Afterwards the
 * table holds exactly the jobs the valid requests created, nothing else
 * changed, the server still answers, and no key secret is stored in plain text.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { freePort } from '../../../../infra/local/aws/dynamodb-local.js';
import { startLocalRuntime, type LocalRuntime } from '../../../../infra/local/runtime.js';
import { createApiKey } from '../../../../lib/queue/catalog/api-keys.js';
import { createQueueContext } from '../../../../lib/queue/context.js';
import { readQueueSettings } from '../../../../lib/queue/settings.js';
import { createDynamoClients, type DynamoClients } from '../../../../lib/store/client.js';
import { leaksInternals } from '../../../support/api.js';
import { rawRequest, type RawAnswer } from '../../../support/raw-http.js';

type Who = 'none' | 'admin' | 'enqueueEmails' | 'enqueueAll' | 'readEmails' | 'readAll' | 'callbackEmails' | 'revoked' | 'expired' | 'wrongSecret' | 'unknownId';

interface Case {
  name: string;
  method: string;
  /** Sent as is, not normalised by the client. */
  path: string;
  who: Who;
  /** A string is sent as is (JSON content type unless `headers` say otherwise); a Buffer as bytes. */
  body?: string | Buffer;
  headers?: Record<string, string>;
  status: number;
  /** The error code, or undefined for a success or an answer of API Gateway's own. */
  code?: string;
  /** API Gateway's own answer: its body is `{"message": gateway}`, the request never reached the api. */
  gateway?: 'Unauthorized' | 'Forbidden';
  /** For a 400 or 413: the field the details must name. */
  field?: string;
  /** `type/id` of the job this valid request creates; `type/*` for a server-chosen id. */
  creates?: string;
}

const json = (value: unknown): string => JSON.stringify(value);
const nested = (depth: number): string => '{"data":' + '['.repeat(depth) + ']'.repeat(depth) + '}';
const secret43 = 'A'.repeat(43);

const CASES: Case[] = [
  // Authentication, answered by the gateway: 401 without an Authorization header, 403 for a key the authorizer refuses.
  { name: 'no Authorization header', method: 'GET', path: '/v1/job-types', who: 'none', status: 401, gateway: 'Unauthorized' },
  { name: 'no Authorization header on an enqueue', method: 'PUT', path: '/v1/jobs/emails/n1', who: 'none', body: json({ data: 1 }), status: 401, gateway: 'Unauthorized' },
  { name: 'a made-up token', method: 'GET', path: '/v1/job-types', who: 'none', headers: { authorization: 'Bearer nope' }, status: 403, gateway: 'Forbidden' },
  { name: 'the admin key under the Basic scheme', method: 'GET', path: '/v1/job-types', who: 'none', headers: { authorization: 'Basic {admin}' }, status: 403, gateway: 'Forbidden' },
  { name: 'an empty bearer token', method: 'GET', path: '/v1/job-types', who: 'none', headers: { authorization: 'Bearer ' }, status: 403, gateway: 'Forbidden' },
  { name: 'the admin key with a character more', method: 'GET', path: '/v1/job-types', who: 'none', headers: { authorization: 'Bearer {admin}x' }, status: 403, gateway: 'Forbidden' },
  { name: 'the admin key with a character less', method: 'GET', path: '/v1/job-types', who: 'none', headers: { authorization: 'Bearer {admin-1}' }, status: 403, gateway: 'Forbidden' },
  { name: 'two bearer tokens', method: 'GET', path: '/v1/job-types', who: 'none', headers: { authorization: 'Bearer {admin} {admin}' }, status: 403, gateway: 'Forbidden' },
  { name: 'a real key id with a wrong secret', method: 'GET', path: '/v1/job-types', who: 'wrongSecret', status: 403, gateway: 'Forbidden' },
  { name: 'a well-formed key that does not exist', method: 'GET', path: '/v1/job-types', who: 'unknownId', status: 403, gateway: 'Forbidden' },
  { name: 'a revoked key', method: 'GET', path: '/v1/jobs/emails/seed-1', who: 'revoked', status: 403, gateway: 'Forbidden' },
  { name: 'an expired key', method: 'GET', path: '/v1/jobs/emails/seed-1', who: 'expired', status: 403, gateway: 'Forbidden' },
  { name: 'the admin key in the query string', method: 'GET', path: '/v1/job-types?token={admin}', who: 'none', status: 401, gateway: 'Unauthorized' },
  { name: 'a callback token with no verifier configured', method: 'POST', path: '/v1/jobs/emails/seed-1?token=abc', who: 'none', body: json({ status: 'succeeded', attempt: 1 }), status: 403, gateway: 'Forbidden' },
  { name: 'an 8 KiB Authorization header', method: 'GET', path: '/v1/job-types', who: 'none', headers: { authorization: `Bearer ${'x'.repeat(8192)}` }, status: 403, gateway: 'Forbidden' },
  { name: 'an unknown route without a key', method: 'GET', path: '/v1/secrets', who: 'none', status: 401, gateway: 'Unauthorized' },
  { name: 'a path that climbs out of /health to the keys', method: 'GET', path: '/health/../v1/keys', who: 'none', status: 401, gateway: 'Unauthorized' },
  { name: 'the header name in capitals and the scheme in lower case', method: 'GET', path: '/v1/job-types', who: 'none', headers: { AUTHORIZATION: 'bearer {admin}' }, status: 200 },

  // Scopes: 403 when the key is valid but does not cover the route or type.
  { name: 'enqueue:emails enqueuing invoices', method: 'PUT', path: '/v1/jobs/invoices/s1', who: 'enqueueEmails', body: json({ data: 1 }), status: 403, code: 'forbidden' },
  { name: 'enqueue:emails reading an emails job', method: 'GET', path: '/v1/jobs/emails/seed-1', who: 'enqueueEmails', status: 403, code: 'forbidden' },
  { name: 'read:emails enqueuing emails', method: 'PUT', path: '/v1/jobs/emails/s2', who: 'readEmails', body: json({ data: 1 }), status: 403, code: 'forbidden' },
  { name: 'read:emails reading an invoices job', method: 'GET', path: '/v1/jobs/invoices/s3', who: 'readEmails', status: 403, code: 'forbidden' },
  { name: 'read:* replacing a job type', method: 'PUT', path: '/v1/job-types/emails', who: 'readAll', body: json({ target: { kind: 'handler', name: 'fail' } }), status: 403, code: 'forbidden' },
  { name: 'enqueue:* creating an admin key', method: 'POST', path: '/v1/keys', who: 'enqueueAll', body: json({ scopes: ['admin'] }), status: 403, code: 'forbidden' },
  { name: 'read:* listing keys', method: 'GET', path: '/v1/keys', who: 'readAll', status: 403, code: 'forbidden' },
  { name: 'callback:emails revoking a key', method: 'DELETE', path: '/v1/keys/{revokedId}', who: 'callbackEmails', status: 403, code: 'forbidden' },
  { name: 'callback:emails replaying a job', method: 'POST', path: '/v1/jobs/emails/seed-1/replay', who: 'callbackEmails', status: 403, code: 'forbidden' },
  { name: 'callback:emails cancelling a job', method: 'DELETE', path: '/v1/jobs/emails/seed-1', who: 'callbackEmails', status: 403, code: 'forbidden' },
  { name: 'read:emails sending a status callback', method: 'POST', path: '/v1/jobs/emails/seed-1', who: 'readEmails', body: json({ status: 'succeeded', attempt: 1 }), status: 403, code: 'forbidden' },
  { name: 'enqueue:emails sending a heartbeat', method: 'POST', path: '/v1/jobs/emails/seed-1/heartbeat', who: 'enqueueEmails', body: json({ attempt: 1 }), status: 403, code: 'forbidden' },
  { name: 'enqueue:* listing job types', method: 'GET', path: '/v1/job-types', who: 'enqueueAll', status: 403, code: 'forbidden' },
  { name: 'callback:emails changing a queued job', method: 'PATCH', path: '/v1/jobs/emails/seed-1', who: 'callbackEmails', body: json({ run_after: 'now' }), status: 403, code: 'forbidden' },
  { name: 'read:emails changing a queued job', method: 'PATCH', path: '/v1/jobs/emails/seed-1', who: 'readEmails', body: json({ priority: 0 }), status: 403, code: 'forbidden' },
  { name: 'enqueue:emails changing an invoices job', method: 'PATCH', path: '/v1/jobs/invoices/seed-2', who: 'enqueueEmails', body: json({ priority: 0 }), status: 403, code: 'forbidden' },
  { name: 'callback:emails calling back an invoices job', method: 'POST', path: '/v1/jobs/invoices/x', who: 'callbackEmails', body: json({ status: 'failed', attempt: 1 }), status: 403, code: 'forbidden' },
  { name: 'read:emails climbing from a job path to the keys', method: 'GET', path: '/v1/jobs/emails/../../keys', who: 'readEmails', status: 403, code: 'forbidden' },

  // Correlation callbacks: keys only, and a 404 that says nothing about other types' jobs.
  { name: 'a correlation callback without a key', method: 'POST', path: '/v1/callbacks/inv-key', who: 'none', body: json({ status: 'succeeded', attempt: 1 }), status: 401, gateway: 'Unauthorized' },
  { name: 'a correlation callback with only a callback token', method: 'POST', path: `/v1/callbacks/inv-key?token=v1.1.${secret43}`, who: 'none', body: json({ status: 'succeeded', attempt: 1 }), status: 401, gateway: 'Unauthorized' },
  { name: 'enqueue:* sending a correlation callback', method: 'POST', path: '/v1/callbacks/inv-key', who: 'enqueueAll', body: json({ status: 'succeeded', attempt: 1 }), status: 403, code: 'forbidden' },
  { name: 'read:* sending a correlation callback', method: 'POST', path: '/v1/callbacks/inv-key', who: 'readAll', body: json({ status: 'succeeded', attempt: 1 }), status: 403, code: 'forbidden' },
  { name: "callback:emails calling back an invoices job by its key: not found, as if no job held it", method: 'POST', path: '/v1/callbacks/inv-key', who: 'callbackEmails', body: json({ status: 'succeeded', attempt: 1 }), status: 404, code: 'not_found' },
  { name: 'callback:emails calling back a key no job holds', method: 'POST', path: '/v1/callbacks/nobody', who: 'callbackEmails', body: json({ status: 'succeeded', attempt: 1 }), status: 404, code: 'not_found' },
  { name: 'an encoded slash in a correlation key', method: 'POST', path: '/v1/callbacks/a%2F..%2Fb', who: 'admin', body: json({ status: 'succeeded', attempt: 1 }), status: 400, code: 'invalid_request', field: 'correlation_key' },
  { name: 'a # in a correlation key, the key separator', method: 'POST', path: '/v1/callbacks/a%23JOB', who: 'admin', body: json({ status: 'succeeded', attempt: 1 }), status: 400, code: 'invalid_request', field: 'correlation_key' },
  { name: 'a correlation key of 257 characters', method: 'POST', path: `/v1/callbacks/${'k'.repeat(257)}`, who: 'admin', body: json({ status: 'succeeded', attempt: 1 }), status: 400, code: 'invalid_request', field: 'correlation_key' },
  { name: 'a correlation callback for an attempt of a queued job', method: 'POST', path: '/v1/callbacks/inv-key', who: 'admin', body: json({ status: 'succeeded', attempt: 1 }), status: 409, code: 'conflict' },
  { name: 'a correlation_key with a space in an enqueue', method: 'PUT', path: '/v1/jobs/emails/ck1', who: 'admin', body: json({ correlation_key: 'a b' }), status: 400, code: 'invalid_request', field: 'correlation_key' },
  { name: "enqueue:* taking the correlation key an unfinished invoices job holds, for another invoices job", method: 'PUT', path: '/v1/jobs/invoices/ck2', who: 'enqueueAll', body: json({ correlation_key: 'inv-key' }), status: 409, code: 'conflict', field: 'correlation_key' },

  // Batch enqueue and /jobber/queue: the rights of enqueueing that type.
  { name: 'a batch without a key', method: 'POST', path: '/v1/jobs/emails/batch', who: 'none', body: json({ jobs: [{ id: 'b0' }] }), status: 401, gateway: 'Unauthorized' },
  { name: 'enqueue:emails batching invoices', method: 'POST', path: '/v1/jobs/invoices/batch', who: 'enqueueEmails', body: json({ jobs: [{ id: 'b1' }] }), status: 403, code: 'forbidden' },
  { name: 'callback:emails batching emails', method: 'POST', path: '/v1/jobs/emails/batch', who: 'callbackEmails', body: json({ jobs: [{ id: 'b2' }] }), status: 403, code: 'forbidden' },
  { name: 'a batch of 101 jobs', method: 'POST', path: '/v1/jobs/emails/batch', who: 'admin', body: json({ jobs: Array.from({ length: 101 }, (_, i) => ({ id: `b${i}` })) }), status: 400, code: 'invalid_request', field: 'jobs' },
  { name: 'a batch body over 2 MiB', method: 'POST', path: '/v1/jobs/emails/batch', who: 'admin', body: json({ jobs: [{ id: 'b3', data: 'x'.repeat(2 * 1024 * 1024) }] }), status: 413, code: 'payload_too_large', field: 'body' },
  { name: 'a batch as text/plain', method: 'POST', path: '/v1/jobs/emails/batch', who: 'admin', body: json({ jobs: [{ id: 'b4' }] }), headers: { 'content-type': 'text/plain' }, status: 415, code: 'unsupported_media_type' },
  { name: 'a batch whose jobs is an object', method: 'POST', path: '/v1/jobs/emails/batch', who: 'admin', body: json({ jobs: { id: 'b5' } }), status: 400, code: 'invalid_request', field: 'jobs' },
  { name: 'a __proto__ inside a batch item', method: 'POST', path: '/v1/jobs/emails/batch', who: 'admin', body: '{"jobs":[{"id":"b6","__proto__":{"admin":true}}]}', status: 400, code: 'invalid_request', field: 'jobs.0.__proto__' },
  { name: 'a job with the id batch', method: 'PUT', path: '/v1/jobs/emails/batch', who: 'admin', body: json({ data: 1 }), status: 400, code: 'invalid_request', field: 'id' },
  { name: '/jobber/queue without a key', method: 'POST', path: '/jobber/queue', who: 'none', body: json({ type: 'emails', payload: 1 }), status: 401, gateway: 'Unauthorized' },
  { name: 'enqueue:emails queueing invoices through /jobber/queue', method: 'POST', path: '/jobber/queue', who: 'enqueueEmails', body: json({ type: 'invoices', payload: 1 }), status: 403, code: 'forbidden' },
  { name: 'read:* queueing through /jobber/queue', method: 'POST', path: '/jobber/queue', who: 'readAll', body: json({ type: 'emails', payload: 1 }), status: 403, code: 'forbidden' },
  { name: '/jobber/queue for a type that does not exist', method: 'POST', path: '/jobber/queue', who: 'admin', body: json({ type: 'nope', payload: 1 }), status: 404, code: 'not_found' },
  { name: '/jobber/queue with a path for a type', method: 'POST', path: '/jobber/queue', who: 'admin', body: json({ type: '../v1/keys', payload: 1 }), status: 400, code: 'invalid_request', field: 'type' },

  // Content types: JSON in UTF-8 only.
  { name: 'text/plain', method: 'PUT', path: '/v1/jobs/emails/c1', who: 'admin', body: json({ data: 1 }), headers: { 'content-type': 'text/plain' }, status: 415, code: 'unsupported_media_type' },
  { name: 'a form body', method: 'PUT', path: '/v1/jobs/emails/c2', who: 'admin', body: 'data=1', headers: { 'content-type': 'application/x-www-form-urlencoded' }, status: 415, code: 'unsupported_media_type' },
  { name: 'a body without a content type', method: 'PUT', path: '/v1/jobs/emails/c3', who: 'admin', body: json({ data: 1 }), headers: { 'content-type': '' }, status: 415, code: 'unsupported_media_type' },
  { name: 'JSON declared as UTF-16', method: 'PUT', path: '/v1/jobs/emails/c4', who: 'admin', body: json({ data: 1 }), headers: { 'content-type': 'application/json; charset=utf-16' }, status: 415, code: 'unsupported_media_type' },
  { name: 'XML', method: 'PUT', path: '/v1/jobs/emails/c5', who: 'admin', body: '<data>1</data>', headers: { 'content-type': 'application/xml' }, status: 415, code: 'unsupported_media_type' },
  { name: 'multipart', method: 'POST', path: '/v1/keys', who: 'admin', body: '--x\r\n\r\n{}\r\n--x--', headers: { 'content-type': 'multipart/form-data; boundary=x' }, status: 415, code: 'unsupported_media_type' },

  // Sizes.
  { name: 'a body over 300 KiB', method: 'PUT', path: '/v1/jobs/emails/z1', who: 'admin', body: json({ data: 'x'.repeat(301 * 1024) }), status: 413, code: 'payload_too_large', field: 'body' },
  { name: 'data over 256 KiB in a body under the cap', method: 'PUT', path: '/v1/jobs/emails/z2', who: 'admin', body: json({ data: 'x'.repeat(257 * 1024) }), status: 413, code: 'payload_too_large', field: 'data' },
  { name: 'a callback result over 64 KiB', method: 'POST', path: '/v1/jobs/emails/seed-1', who: 'callbackEmails', body: json({ status: 'succeeded', attempt: 1, result: 'r'.repeat(65 * 1024) }), status: 413, code: 'payload_too_large', field: 'result' },

  // Bodies that are not JSON, or not the JSON expected.
  { name: 'truncated JSON', method: 'PUT', path: '/v1/jobs/emails/j1', who: 'admin', body: '{"data":', status: 400, code: 'invalid_request', field: 'body' },
  { name: 'single-quoted JSON', method: 'PUT', path: '/v1/jobs/emails/j2', who: 'admin', body: "{'data':1}", status: 400, code: 'invalid_request', field: 'body' },
  { name: 'a trailing comma', method: 'PUT', path: '/v1/jobs/emails/j3', who: 'admin', body: '{"data":1,}', status: 400, code: 'invalid_request', field: 'body' },
  { name: 'NaN', method: 'PUT', path: '/v1/jobs/emails/j4', who: 'admin', body: '{"priority":NaN}', status: 400, code: 'invalid_request', field: 'body' },
  { name: 'a byte order mark', method: 'PUT', path: '/v1/jobs/emails/j5', who: 'admin', body: '\uFEFF{"data":1}', status: 400, code: 'invalid_request', field: 'body' },
  { name: 'null as the body', method: 'PUT', path: '/v1/jobs/emails/j6', who: 'admin', body: 'null', status: 400, code: 'invalid_request', field: 'body' },
  { name: 'an array as the body', method: 'PUT', path: '/v1/jobs/emails/j7', who: 'admin', body: '[]', status: 400, code: 'invalid_request', field: 'body' },
  { name: 'JSON nested 101 deep', method: 'PUT', path: '/v1/jobs/emails/j8', who: 'admin', body: nested(101), status: 400, code: 'invalid_request', field: 'body' },
  { name: 'JSON nested 50 000 deep', method: 'PUT', path: '/v1/jobs/emails/j9', who: 'admin', body: nested(50_000), status: 400, code: 'invalid_request', field: 'body' },

  // Numbers out of range.
  { name: 'a priority of 1e309', method: 'PUT', path: '/v1/jobs/emails/m1', who: 'admin', body: '{"priority":1e309}', status: 400, code: 'invalid_request', field: 'priority' },
  { name: 'a negative priority', method: 'PUT', path: '/v1/jobs/emails/m2', who: 'admin', body: json({ priority: -1 }), status: 400, code: 'invalid_request', field: 'priority' },
  { name: 'a fractional priority', method: 'PUT', path: '/v1/jobs/emails/m3', who: 'admin', body: json({ priority: 1.5 }), status: 400, code: 'invalid_request', field: 'priority' },
  { name: 'a priority as a string', method: 'PUT', path: '/v1/jobs/emails/m4', who: 'admin', body: json({ priority: '5' }), status: 400, code: 'invalid_request', field: 'priority' },
  { name: 'a weight past 2^53', method: 'PUT', path: '/v1/jobs/emails/m5', who: 'admin', body: '{"weight":9007199254740993}', status: 400, code: 'invalid_request', field: 'weight' },
  { name: 'data holding 1e400', method: 'PUT', path: '/v1/jobs/emails/m6', who: 'admin', body: '{"data":{"amount":1e400}}', status: 400, code: 'invalid_request', field: 'data.amount' },
  { name: 'zero attempts', method: 'PUT', path: '/v1/job-types/t1', who: 'admin', body: json({ target: { kind: 'handler', name: 'echo' }, attempts: 0 }), status: 400, code: 'invalid_request', field: 'attempts' },
  { name: '101 attempts', method: 'PUT', path: '/v1/job-types/t1', who: 'admin', body: json({ target: { kind: 'handler', name: 'echo' }, attempts: 101 }), status: 400, code: 'invalid_request', field: 'attempts' },
  { name: 'a timeout over a day', method: 'PUT', path: '/v1/job-types/t1', who: 'admin', body: json({ target: { kind: 'handler', name: 'echo' }, timeout_s: 86_401 }), status: 400, code: 'invalid_request', field: 'timeout_s' },
  { name: 'a negative visibility timeout', method: 'PUT', path: '/v1/job-types/t1', who: 'admin', body: json({ target: { kind: 'handler', name: 'echo' }, visibility_timeout_s: -5 }), status: 400, code: 'invalid_request', field: 'visibility_timeout_s' },
  { name: 'a negative concurrency', method: 'PUT', path: '/v1/job-types/t1', who: 'admin', body: json({ target: { kind: 'handler', name: 'echo' }, concurrency: -1 }), status: 400, code: 'invalid_request', field: 'concurrency' },
  { name: 'a retry delay of 1e400', method: 'PUT', path: '/v1/job-types/t1', who: 'admin', body: '{"target":{"kind":"handler","name":"echo"},"retry":{"kind":"fixed","delay_s":1e400}}', status: 400, code: 'invalid_request', field: 'retry.delay_s' },
  { name: 'a heartbeat extension over 12 hours', method: 'POST', path: '/v1/jobs/emails/seed-1/heartbeat', who: 'callbackEmails', body: json({ attempt: 1, extend_s: 43_201 }), status: 400, code: 'invalid_request', field: 'extend_s' },
  { name: 'a callback for attempt 0', method: 'POST', path: '/v1/jobs/emails/seed-1', who: 'callbackEmails', body: json({ status: 'succeeded', attempt: 0 }), status: 400, code: 'invalid_request', field: 'attempt' },
  { name: 'a callback for attempt 1.5', method: 'POST', path: '/v1/jobs/emails/seed-1', who: 'callbackEmails', body: json({ status: 'succeeded', attempt: 1.5 }), status: 400, code: 'invalid_request', field: 'attempt' },

  // Dates.
  { name: 'run_after without an offset', method: 'PUT', path: '/v1/jobs/emails/d1', who: 'admin', body: json({ run_after: '2026-11-21T10:00:00' }), status: 400, code: 'invalid_request', field: 'run_after' },
  { name: 'run_after as a bare date', method: 'PUT', path: '/v1/jobs/emails/d2', who: 'admin', body: json({ run_after: '2026-11-21' }), status: 400, code: 'invalid_request', field: 'run_after' },
  { name: 'run_after on February 30th', method: 'PUT', path: '/v1/jobs/emails/d3', who: 'admin', body: json({ run_after: '2026-02-30T00:00:00Z' }), status: 400, code: 'invalid_request', field: 'run_after' },
  { name: 'run_after as epoch milliseconds', method: 'PUT', path: '/v1/jobs/emails/d4', who: 'admin', body: json({ run_after: 1_764_000_000_000 }), status: 400, code: 'invalid_request', field: 'run_after' },
  { name: 'run_after in year 0', method: 'PUT', path: '/v1/jobs/emails/d5', who: 'admin', body: json({ run_after: '0000-01-01T00:00:00Z' }), status: 400, code: 'invalid_request', field: 'run_after' },
  { name: 'expires_at before run_after', method: 'PUT', path: '/v1/jobs/emails/d6', who: 'admin', body: json({ run_after: '2030-01-02T00:00:00Z', expires_at: '2030-01-01T00:00:00Z' }), status: 400, code: 'invalid_request', field: 'expires_at' },
  { name: 'a key expiring in the past', method: 'POST', path: '/v1/keys', who: 'admin', body: json({ scopes: ['read:*'], expires_at: '2020-01-01T00:00:00Z' }), status: 400, code: 'invalid_request', field: 'expires_at' },

  // Unknown fields are named.
  { name: 'a misspelt job field', method: 'PUT', path: '/v1/jobs/emails/u1', who: 'admin', body: json({ dta: 1 }), status: 400, code: 'invalid_request', field: 'dta' },
  { name: 'an unknown field inside target', method: 'PUT', path: '/v1/job-types/t1', who: 'admin', body: json({ target: { kind: 'handler', name: 'echo', url: 'http://x' } }), status: 400, code: 'invalid_request', field: 'target.url' },
  { name: 'an unknown callback field', method: 'POST', path: '/v1/jobs/emails/seed-1', who: 'callbackEmails', body: json({ status: 'succeeded', attempt: 1, statuss: 'x' }), status: 400, code: 'invalid_request', field: 'statuss' },
  { name: 'a key body with scope for scopes', method: 'POST', path: '/v1/keys', who: 'admin', body: json({ scopes: ['read:*'], scope: 'admin' }), status: 400, code: 'invalid_request', field: 'scope' },
  { name: 'an unknown scope', method: 'POST', path: '/v1/keys', who: 'admin', body: json({ scopes: ['root'] }), status: 400, code: 'invalid_request', field: 'scopes.0' },

  // Prototype pollution and duplicated keys.
  { name: 'a top-level __proto__', method: 'PUT', path: '/v1/jobs/emails/p1', who: 'admin', body: '{"__proto__":{"admin":true},"data":1}', status: 400, code: 'invalid_request', field: '__proto__' },
  { name: 'a __proto__ inside data', method: 'PUT', path: '/v1/jobs/emails/p2', who: 'admin', body: '{"data":{"__proto__":{"polluted":true}}}', status: 400, code: 'invalid_request', field: 'data.__proto__' },
  { name: 'a __proto__ spelt with an escape', method: 'PUT', path: '/v1/jobs/emails/p3', who: 'admin', body: '{"data":{"\\u005f_proto__":{"polluted":true}}}', status: 400, code: 'invalid_request', field: 'data.__proto__' },
  { name: 'a top-level constructor.prototype', method: 'PUT', path: '/v1/jobs/emails/p4', who: 'admin', body: '{"constructor":{"prototype":{"polluted":true}}}', status: 400, code: 'invalid_request', field: 'constructor' },
  { name: 'a duplicated priority', method: 'PUT', path: '/v1/jobs/emails/p5', who: 'admin', body: '{"priority":1,"priority":2}', status: 400, code: 'invalid_request', field: 'priority' },
  { name: 'a duplicated key inside data', method: 'PUT', path: '/v1/jobs/emails/p6', who: 'admin', body: '{"data":{"to":"a","to":"b"}}', status: 400, code: 'invalid_request', field: 'data.to' },
  { name: 'a key duplicated through an escape', method: 'PUT', path: '/v1/jobs/emails/p7', who: 'admin', body: '{"data":1,"\\u0064ata":2}', status: 400, code: 'invalid_request', field: 'data' },
  { name: 'scopes given twice to slip in admin', method: 'POST', path: '/v1/keys', who: 'admin', body: '{"scopes":["read:*"],"scopes":["admin"]}', status: 400, code: 'invalid_request', field: 'scopes' },

  // Path parameters.
  { name: 'an encoded path traversal in an id', method: 'GET', path: '/v1/jobs/emails/..%2F..%2Fkeys', who: 'admin', status: 400, code: 'invalid_request', field: 'id' },
  { name: 'a NUL byte in an id', method: 'PUT', path: '/v1/jobs/emails/a%00b', who: 'admin', body: json({ data: 1 }), status: 400, code: 'invalid_request', field: 'id' },
  { name: 'a space in an id', method: 'PUT', path: '/v1/jobs/emails/a%20b', who: 'admin', body: json({ data: 1 }), status: 400, code: 'invalid_request', field: 'id' },
  { name: 'a newline in an id', method: 'PUT', path: '/v1/jobs/emails/a%0Ab', who: 'admin', body: json({ data: 1 }), status: 400, code: 'invalid_request', field: 'id' },
  { name: 'an id of 129 characters', method: 'PUT', path: `/v1/jobs/emails/${'a'.repeat(129)}`, who: 'admin', body: json({ data: 1 }), status: 400, code: 'invalid_request', field: 'id' },
  { name: 'a non-ASCII id', method: 'PUT', path: '/v1/jobs/emails/caf%C3%A9', who: 'admin', body: json({ data: 1 }), status: 400, code: 'invalid_request', field: 'id' },
  { name: 'broken percent-encoding in an id', method: 'GET', path: '/v1/jobs/emails/%E0%A4%A', who: 'admin', status: 400, code: 'invalid_request', field: 'id' },
  { name: 'an id starting with a dash', method: 'PUT', path: '/v1/jobs/emails/-rf', who: 'admin', body: json({ data: 1 }), status: 400, code: 'invalid_request', field: 'id' },
  { name: 'a # in an id, the key separator', method: 'PUT', path: '/v1/jobs/emails/a%23JOB', who: 'admin', body: json({ data: 1 }), status: 400, code: 'invalid_request', field: 'id' },
  { name: 'a type name of 65 characters', method: 'PUT', path: `/v1/jobs/${'t'.repeat(65)}/x`, who: 'admin', body: json({ data: 1 }), status: 400, code: 'invalid_request', field: 'type' },
  { name: 'a job type name starting with a dot', method: 'PUT', path: '/v1/job-types/.hidden', who: 'admin', body: json({ target: { kind: 'handler', name: 'echo' } }), status: 400, code: 'invalid_request', field: 'name' },
  { name: 'a key id that is not one', method: 'DELETE', path: '/v1/keys/KEY%23x', who: 'admin', status: 400, code: 'invalid_request', field: 'id' },
  { name: 'a job of a type that does not exist', method: 'PUT', path: '/v1/jobs/nope/x', who: 'admin', body: json({ data: 1 }), status: 404, code: 'not_found' },

  // Methods and routes.
  { name: 'PATCH on a job type', method: 'PATCH', path: '/v1/job-types/emails', who: 'admin', body: json({ attempts: 1 }), status: 404, code: 'not_found' },
  { name: 'GET on the replay route', method: 'GET', path: '/v1/jobs/emails/seed-1/replay', who: 'admin', status: 404, code: 'not_found' },
  { name: "a PATCH changing a job's data", method: 'PATCH', path: '/v1/jobs/emails/seed-1', who: 'admin', body: json({ data: { seed: false } }), status: 400, code: 'invalid_request', field: 'data' },
  { name: 'a PATCH with a priority beyond a double', method: 'PATCH', path: '/v1/jobs/emails/seed-1', who: 'admin', body: '{"priority": 1e400}', status: 400, code: 'invalid_request', field: 'priority' },
  { name: 'a PATCH with an empty body', method: 'PATCH', path: '/v1/jobs/emails/seed-1', who: 'admin', body: json({}), status: 400, code: 'invalid_request', field: 'body' },
  { name: 'a PATCH of a job that does not exist', method: 'PATCH', path: '/v1/jobs/emails/nope', who: 'admin', body: json({ priority: 1 }), status: 404, code: 'not_found' },
  { name: 'POST on /health without a key: only its GET is public', method: 'POST', path: '/health', who: 'none', body: json({}), status: 401, gateway: 'Unauthorized' },
  { name: 'POST on /health', method: 'POST', path: '/health', who: 'admin', body: json({}), status: 404, code: 'not_found' },

  // Valid requests among them: these are the only ones that create jobs.
  { name: 'valid: the admin enqueues', method: 'PUT', path: '/v1/jobs/emails/valid-1', who: 'admin', body: json({ data: { to: 'a@example.com' } }), status: 201, creates: 'emails/valid-1' },
  { name: 'valid: enqueue:emails enqueues an emails job', method: 'PUT', path: '/v1/jobs/emails/valid-2', who: 'enqueueEmails', body: json({ data: 2 }), status: 201, creates: 'emails/valid-2' },
  { name: 'valid: enqueue:* enqueues with a server id', method: 'POST', path: '/v1/jobs/invoices', who: 'enqueueAll', body: json({ data: 3 }), status: 201, creates: 'invoices/*' },
  { name: 'valid: the same body again is the same job', method: 'PUT', path: '/v1/jobs/emails/valid-1', who: 'enqueueEmails', body: json({ data: { to: 'a@example.com' } }), status: 200 },
  { name: 'a different body for an existing id', method: 'PUT', path: '/v1/jobs/emails/valid-1', who: 'admin', body: json({ data: { to: 'b@example.com' } }), status: 409, code: 'conflict' },
  { name: 'valid: read:emails reads a job', method: 'GET', path: '/v1/jobs/emails/valid-1', who: 'readEmails', status: 200 },
  { name: 'valid: constructor.prototype inside data is only data', method: 'PUT', path: '/v1/jobs/emails/valid-3', who: 'admin', body: '{"data":{"constructor":{"prototype":{"polluted":true}}}}', status: 201, creates: 'emails/valid-3' },
  { name: 'valid: no body takes every default', method: 'PUT', path: '/v1/jobs/emails/valid-4', who: 'admin', status: 201, creates: 'emails/valid-4' },
  { name: 'valid: an explicit UTF-8 charset', method: 'PUT', path: '/v1/jobs/emails/valid-5', who: 'admin', body: json({ data: 'é' }), headers: { 'content-type': 'application/json; charset=UTF-8' }, status: 201, creates: 'emails/valid-5' },
  { name: 'valid: an id with every allowed punctuation', method: 'PUT', path: '/v1/jobs/emails/a.b:c_d-e', who: 'admin', body: json({ data: 1 }), status: 201, creates: 'emails/a.b:c_d-e' },
  { name: 'a callback for an attempt that is not open', method: 'POST', path: '/v1/jobs/emails/seed-1', who: 'callbackEmails', body: json({ status: 'succeeded', attempt: 1 }), status: 409, code: 'conflict' },
  { name: 'valid: enqueue:emails cancels its job', method: 'DELETE', path: '/v1/jobs/emails/valid-2', who: 'enqueueEmails', status: 200 },
  { name: 'valid: enqueue:emails enqueues a batch', method: 'POST', path: '/v1/jobs/emails/batch', who: 'enqueueEmails', body: json({ jobs: [{ id: 'valid-6' }] }), status: 200, creates: 'emails/valid-6' },
  { name: 'valid: enqueue:emails queues through /jobber/queue', method: 'POST', path: '/jobber/queue', who: 'enqueueEmails', body: json({ type: 'emails', payload: 7 }), status: 201, creates: 'emails/*' },
];

let dataDir: string;
let runtime: LocalRuntime;
let clients: DynamoClients;
const tableName = `hostile-${randomUUID()}`;
const keys = {} as Record<Exclude<Who, 'none'>, string>;
let revokedId: string;
const createdJobs = new Set<string>(['emails/seed-1', 'invoices/seed-2']);
let typesBefore: unknown[];


const send = (method: string, path: string, headers: Record<string, string>, body?: string | Buffer): Promise<RawAnswer> =>
  rawRequest(runtime.url, method, path, headers, body);

const call = (method: string, path: string, key: string | undefined, body?: unknown) =>
  send(
    method,
    path,
    { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body === undefined ? undefined : JSON.stringify(body),
  );

async function scanTable(): Promise<Record<string, any>[]> {
  const items: Record<string, any>[] = [];
  let startKey: Record<string, any> | undefined;
  do {
    const page = await clients.base.send(new ScanCommand({ TableName: tableName, ConsistentRead: true, ExclusiveStartKey: startKey }));
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items;
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'djq-hostile-'));
  const env = {
    DYNAMODB_ENDPOINT: inject('dynamoEndpoint'),
    TABLE_NAME: tableName,
    PORT: String(await freePort()),
    DATA_DIR: dataDir,
    POLL_INTERVAL_MS: '1000',
  };
  runtime = await startLocalRuntime(env);
  clients = createDynamoClients({ endpoint: env.DYNAMODB_ENDPOINT });
  keys.admin = runtime.adminKey;

  // Paused types: the poller leaves their jobs queued, so each request meets the state the table says.
  for (const type of ['emails', 'invoices']) {
    const created = await call('PUT', `/v1/job-types/${type}`, keys.admin, { target: { kind: 'handler', name: 'echo' }, concurrency: 0 });
    expect(created.status).toBe(201);
  }
  expect((await call('PUT', '/v1/jobs/emails/seed-1', keys.admin, { data: { seed: true } })).status).toBe(201);
  expect((await call('PUT', '/v1/jobs/invoices/seed-2', keys.admin, { data: { seed: true }, correlation_key: 'inv-key' })).status).toBe(201);

  const scoped: [Exclude<Who, 'none'>, string][] = [
    ['enqueueEmails', 'enqueue:emails'],
    ['enqueueAll', 'enqueue:*'],
    ['readEmails', 'read:emails'],
    ['readAll', 'read:*'],
    ['callbackEmails', 'callback:emails'],
    ['revoked', 'admin'],
  ];
  for (const [who, scope] of scoped) {
    const created = await call('POST', '/v1/keys', keys.admin, { scopes: [scope] });
    expect(created.status).toBe(201);
    keys[who] = JSON.parse(created.text).key;
    if (who === 'revoked') revokedId = JSON.parse(created.text).id;
  }
  expect((await call('DELETE', `/v1/keys/${revokedId}`, keys.admin)).status).toBe(200);

  // An admin key that expired a minute ago, made through the store with a clock set back an hour.
  const settings = readQueueSettings({ TABLE_NAME: tableName });
  const pastCtx = createQueueContext(clients.db, settings, { nowMs: () => Date.now() - 3_600_000 });
  keys.expired = (await createApiKey(pastCtx, { scopes: ['admin'], expiresAtMs: Date.now() - 60_000 })).presented;
  keys.wrongSecret = `${keys.enqueueAll.slice(0, -43)}${secret43}`;
  keys.unknownId = `djq_0000000000000000_${secret43}`;

  typesBefore = (await scanTable()).filter((item) => item.pk.S.startsWith('TYPE#'));
}, 120_000);

afterAll(async () => {
  await runtime?.stop();
  clients?.base.destroy();
  await rm(dataDir, { recursive: true, force: true });
});

/** Placeholders in a case: {admin} the admin key, {admin-1} it less its last character, {revokedId} the revoked key's id. */
const fill = (text: string): string =>
  text.replaceAll('{admin-1}', keys.admin.slice(0, -1)).replaceAll('{admin}', keys.admin).replaceAll('{revokedId}', revokedId);

describe('hostile and malformed requests over HTTP', () => {
  test(`the table has at least 60 cases (${CASES.length})`, () => {
    expect(CASES.length).toBeGreaterThanOrEqual(60);
  });

  test.each(CASES)('$name → $status', async (c) => {
    const headers: Record<string, string> = {};
    if (c.body !== undefined) headers['content-type'] = 'application/json';
    if (c.who !== 'none') headers.authorization = `Bearer ${keys[c.who]}`;
    for (const [name, value] of Object.entries(c.headers ?? {})) {
      if (value === '') delete headers[name];
      else headers[name] = fill(value);
    }
    const answer = await send(c.method, fill(c.path), headers, c.body);
    const body = answer.text.length > 0 ? JSON.parse(answer.text) : undefined;

    expect({ status: answer.status, code: body?.error?.code }).toEqual({ status: c.status, code: c.code });
    if (c.gateway !== undefined) expect(body).toEqual({ message: c.gateway });
    if (c.code !== undefined) {
      expect(body.error.request_id).toBe(answer.headers['x-request-id']);
      expect(leaksInternals(answer.text)).toBe(false);
    }
    if (c.field !== undefined) expect(body.error.details.map((d: { field: string }) => d.field)).toContain(c.field);
    if (c.creates?.endsWith('/*')) createdJobs.add(`${c.creates.slice(0, -2)}/${body.id ?? body['job-id']}`);
    else if (c.creates) createdJobs.add(c.creates);
  });
});

describe('after the suite', () => {
  test('the table holds exactly the jobs the valid requests created', async () => {
    const jobs = (await scanTable()).filter((item) => item.pk.S.startsWith('JOB#')).map((item) => item.pk.S.slice('JOB#'.length).replace('#', '/'));
    expect(jobs.sort()).toEqual([...createdJobs].sort());
  });

  test('the job types are as they were set up', async () => {
    expect((await scanTable()).filter((item) => item.pk.S.startsWith('TYPE#'))).toEqual(typesBefore);
  });

  test('the keys are the ones set up: none was created or revoked by the suite', async () => {
    const stored = (await scanTable()).filter((item) => item.pk.S.startsWith('KEY#'));
    expect(stored).toHaveLength(8); // the runtime's admin, six made by the API, the expired one
    expect(stored.filter((item) => item.revokedAtMs !== undefined).map((item) => item.id.S)).toEqual([revokedId]);
  });

  test('no prototype was polluted', () => {
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
  });

  test('the server still answers, publicly and with a key', async () => {
    expect((await call('GET', '/health', undefined)).status).toBe(200);
    expect((await call('GET', '/v1/jobs/emails/seed-1', keys.readAll)).status).toBe(200);
  });

  test('no key secret is stored in plain text anywhere in the table', async () => {
    const everything = JSON.stringify(await scanTable());
    const secrets = Object.values(keys).map((presented) => presented.slice(-43));
    expect(secrets.filter((secret) => secret !== secret43)).toHaveLength(8);
    for (const secret of secrets.filter((s) => s !== secret43)) expect(everything).not.toContain(secret);
  });
});
