/** Request bodies: JSON only, in UTF-8, and every key said once and never `__proto__`. */
import { describe, expect, test } from 'vitest';
import { findBodyIssue, parseJsonBody } from '../../../../functions/api/http.js';
import { ValidationError } from '../../../../lib/domain/errors.js';
import { UnsupportedMediaTypeError } from '../../../../lib/domain/errors.js';
import { buildHttpApiEvent } from '../../../support/api.js';

describe('findBodyIssue', () => {
  test.each([
    ['a flat object', '{"a":1,"b":"x"}'],
    ['the same key in sibling objects', '{"a":{"k":1},"b":{"k":2}}'],
    ['the same key in array elements', '[{"k":1},{"k":2}]'],
    ['strings that look like keys', '{"a":"\\"a\\":1","b":["{\\"a\\"", "}"]}'],
    ['empty containers and whitespace', ' { "a" : [ ] , "b" : { } , "c" : [ 1 , { } ] } '],
    ['a scalar body', '42'],
    ['a key called constructor', '{"constructor":{"prototype":{"polluted":true}}}'],
  ])('finds nothing in %s', (_, text) => {
    expect(findBodyIssue(text)).toBeUndefined();
  });

  test('names a duplicated top-level key', () => {
    expect(findBodyIssue('{"attempts":1,"attempts":100}')).toEqual({ field: 'attempts', message: 'is given more than once' });
  });

  test('names a duplicated key by its path, array indexes included', () => {
    expect(findBodyIssue('{"data":{"items":[{"x":1},{"x":1,"x":2}]}}')).toEqual({ field: 'data.items.1.x', message: 'is given more than once' });
  });

  test('sees through escapes: "a" and "\\u0061" are the same key', () => {
    expect(findBodyIssue('{"a":1,"\\u0061":2}')).toEqual({ field: 'a', message: 'is given more than once' });
  });

  test('names a __proto__ key wherever it is', () => {
    expect(findBodyIssue('{"data":{"__proto__":{"admin":true}}}')).toEqual({ field: 'data.__proto__', message: 'is not allowed as a key' });
  });

  test('names a number too large for a double, which JSON.parse would turn into Infinity', () => {
    expect(findBodyIssue('{"data":{"n":[1, -1e400]}}')).toEqual({ field: 'data.n.1', message: 'is a number too large to represent' });
  });

  test('accepts large but representable numbers and tiny ones', () => {
    expect(findBodyIssue('{"a":1.7e308,"b":1e-400,"c":-0}')).toBeUndefined();
  });

  test('names an escaped __proto__ key too', () => {
    expect(findBodyIssue('{"\\u005f_proto__":{}}')?.field).toBe('__proto__');
  });
});

describe('parseJsonBody', () => {
  const withType = (contentType: string, body = '{"a":1}') =>
    buildHttpApiEvent('PUT', '/v1/jobs/t/1', { body, headers: { 'content-type': contentType } });

  test.each(['application/json', 'application/json; charset=utf-8', 'application/json;charset="UTF-8"', 'application/vnd.api+json'])(
    'accepts %s',
    (contentType) => {
      expect(parseJsonBody(withType(contentType))).toEqual({ a: 1 });
    },
  );

  test.each(['text/plain', 'application/x-www-form-urlencoded', 'application/jsonp', 'application/json; charset=utf-16', ''])(
    'refuses "%s" as unsupported media',
    (contentType) => {
      expect(() => parseJsonBody(withType(contentType))).toThrow(UnsupportedMediaTypeError);
    },
  );

  test('a duplicated key is a ValidationError naming it', () => {
    const error = (() => {
      try {
        parseJsonBody(withType('application/json', '{"priority":1,"priority":2}'));
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).details).toEqual([{ field: 'priority', message: 'is given more than once' }]);
  });
});
