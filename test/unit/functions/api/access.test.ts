/** The api's own check of the caller the authorizer admitted: one access rule per route kind. */
import { describe, expect, test } from 'vitest';
import { ADMIN, PUBLIC, assertCallbackAttempt, authorize, typeScope, type Access } from '../../../../functions/api/access.js';
import { principalToContext, type Principal } from '../../../../functions/shared/principal.js';
import { ConflictError, ForbiddenError, UnauthorizedError } from '../../../../lib/domain/errors.js';
import { ValidationError } from '../../../../lib/domain/errors.js';
import { buildHttpApiEvent } from '../../../support/api.js';

const NOW_MS = Date.parse('2026-11-21T10:00:00.000Z');

function eventFor(principal: Principal | undefined, pathParameters: Record<string, string> = { type: 'emails', id: 'job-1' }) {
  const event = buildHttpApiEvent('POST', '/v1/jobs/emails/job-1', {});
  return {
    ...event,
    pathParameters,
    requestContext: { ...event.requestContext, ...(principal ? { authorizer: { lambda: principalToContext(principal) } } : {}) },
  };
}

const key = (...scopes: string[]): Principal => ({ kind: 'key', keyId: '0123456789abcdef', scopes: scopes as never });
const callbackToken: Principal = { kind: 'callback_token', type: 'emails', id: 'job-1', attempt: 2 };
const CALLBACK: Access = { kind: 'callback' };

describe('authorize', () => {
  test('a public route needs no principal', () => {
    expect(authorize(eventFor(undefined), PUBLIC, NOW_MS)).toBeUndefined();
  });

  test('a protected route without an authorizer context is 401: the api fails closed', () => {
    expect(() => authorize(eventFor(undefined), typeScope('read'), NOW_MS)).toThrow(UnauthorizedError);
  });

  test('a key past its expiry is 401 even when the authorizer admitted it earlier', () => {
    const expired: Principal = { kind: 'key', keyId: 'k', scopes: ['admin'], expiresAtMs: NOW_MS };
    expect(() => authorize(eventFor(expired), ADMIN, NOW_MS)).toThrow(UnauthorizedError);
  });

  test.each<[string, Principal, Access, boolean]>([
    ['admin on an admin route', key('admin'), ADMIN, true],
    ['admin on a typed route', key('admin'), typeScope('enqueue'), true],
    ['enqueue:* on an admin route', key('enqueue:*'), ADMIN, false],
    ['enqueue:emails on enqueue for emails', key('enqueue:emails'), typeScope('enqueue'), true],
    ['enqueue:invoices on enqueue for emails', key('enqueue:invoices'), typeScope('enqueue'), false],
    ['read:emails on enqueue for emails', key('read:emails'), typeScope('enqueue'), false],
    ['read:* on read for emails', key('read:*'), typeScope('read'), true],
    ['callback:emails on a callback', key('callback:emails'), CALLBACK, true],
    ['enqueue:emails on a callback', key('enqueue:emails'), CALLBACK, false],
    ['read:invoices on listing types', key('read:invoices'), { kind: 'any_type', action: 'read' }, true],
    ['enqueue:* on listing types', key('enqueue:*'), { kind: 'any_type', action: 'read' }, false],
    ["a callback token on its job's callback", callbackToken, CALLBACK, true],
    ["a callback token on its job's read route", callbackToken, typeScope('read'), false],
    ['a callback token on an admin route', callbackToken, ADMIN, false],
  ])('%s: allowed %s', (_, principal, access, allowed) => {
    const check = () => authorize(eventFor(principal), access, NOW_MS);
    if (allowed) expect(check()).toEqual(principal);
    else expect(check).toThrow(ForbiddenError);
  });

  test("a callback token for another job of the same type is 403", () => {
    expect(() => authorize(eventFor(callbackToken, { type: 'emails', id: 'job-2' }), CALLBACK, NOW_MS)).toThrow(ForbiddenError);
  });

  test('a type outside its pattern is 400 before any scope is weighed', () => {
    expect(() => authorize(eventFor(key('read:*'), { type: '..', id: 'x' }), typeScope('read'), NOW_MS)).toThrow(ValidationError);
  });
});

describe('assertCallbackAttempt', () => {
  test('a callback token may report its own attempt', () => {
    expect(() => assertCallbackAttempt(callbackToken, 2)).not.toThrow();
  });

  test('a callback token reporting another attempt is a conflict, as any stale attempt is', () => {
    expect(() => assertCallbackAttempt(callbackToken, 3)).toThrow(ConflictError);
  });

  test('a key may report any attempt: the attempt guard decides', () => {
    expect(() => assertCallbackAttempt(key('callback:emails'), 7)).not.toThrow();
  });
});
