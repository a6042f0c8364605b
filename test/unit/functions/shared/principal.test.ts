/** The authorizer's context as the api reads it back, and the routes a callback token opens. */
import { describe, expect, test } from 'vitest';
import { callbackRouteOf, principalFromContext, principalToContext, type Principal } from '../../../../functions/shared/principal.js';

describe('authorizer context', () => {
  test.each<Principal>([
    { kind: 'key', keyId: '0123456789abcdef', scopes: ['enqueue:emails', 'read:*'] },
    { kind: 'key', keyId: 'API_TOKEN', scopes: ['admin'], expiresAtMs: 1_900_000_000_000 },
    { kind: 'callback_token', type: 'emails', id: 'job-1', attempt: 3 },
  ])('round-trips a $kind principal', (principal) => {
    expect(principalFromContext(principalToContext(principal))).toEqual(principal);
  });

  test('numbers that arrive as strings are read as numbers', () => {
    expect(principalFromContext({ principal: 'callback_token', job_type: 'emails', job_id: 'j', attempt: '2' })).toEqual({
      kind: 'callback_token',
      type: 'emails',
      id: 'j',
      attempt: 2,
    });
  });

  test.each([
    ['no context', undefined],
    ['an empty context', {}],
    ['an unknown principal', { principal: 'root', key_id: 'x', scopes: 'admin' }],
    ['a scope list with an unknown scope', { principal: 'key', key_id: 'x', scopes: 'admin root' }],
    ['an empty scope list', { principal: 'key', key_id: 'x', scopes: '' }],
    ['a callback token without an attempt', { principal: 'callback_token', job_type: 'emails', job_id: 'j' }],
    ['a callback token for a malformed job id', { principal: 'callback_token', job_type: 'emails', job_id: '../x', attempt: 1 }],
  ])('%s is no principal', (_, context) => {
    expect(principalFromContext(context)).toBeUndefined();
  });
});

describe('callbackRouteOf', () => {
  test('names the job of a status callback', () => {
    expect(callbackRouteOf('POST', '/v1/jobs/emails/job-1')).toEqual({ type: 'emails', id: 'job-1' });
  });

  test('names the job of a heartbeat', () => {
    expect(callbackRouteOf('POST', '/v1/jobs/emails/job-1/heartbeat')).toEqual({ type: 'emails', id: 'job-1' });
  });

  test('decodes the path parameters', () => {
    expect(callbackRouteOf('POST', '/v1/jobs/emails/a%3Ab')).toEqual({ type: 'emails', id: 'a:b' });
  });

  test.each([
    ['GET of the job', 'GET', '/v1/jobs/emails/job-1'],
    ['DELETE of the job', 'DELETE', '/v1/jobs/emails/job-1'],
    ['a replay', 'POST', '/v1/jobs/emails/job-1/replay'],
    ['an enqueue with a server id', 'POST', '/v1/jobs/emails'],
    ['a key route', 'POST', '/v1/keys'],
    ['a job id outside its pattern', 'POST', '/v1/jobs/emails/..%2Fkeys'],
    ['broken URL encoding', 'POST', '/v1/jobs/emails/%E0%A4%A'],
  ])('%s is not a callback route', (_, method, path) => {
    expect(callbackRouteOf(method, path)).toBeUndefined();
  });
});
