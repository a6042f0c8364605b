/** Credentials in an http target's URL: refused in a new URL, hidden in one shown back (lib/domain/url-credentials.ts). */
import { describe, expect, test } from 'vitest';
import { urlCredentialIssue, urlForReaders, urlWithoutCredentials } from '../../../../lib/domain/url-credentials.js';

const issue = (text: string): string | undefined => urlCredentialIssue(new URL(text));

describe('urlCredentialIssue', () => {
  test('a URL with a host, a path and plain query parameters is fine', () => {
    expect(issue('https://example.com:8443/hooks/jobs?tenant=42&mode=fast')).toBeUndefined();
  });

  test.each(['https://user:secret@example.com/', 'https://user@example.com/', 'https://:secret@example.com/'])(
    '%s is refused for its user or password',
    (text) => {
      expect(issue(text)).toMatch(/^must not carry credentials \(user:password@\): the URL is shown to every key/);
    },
  );

  test('a fragment is refused: it never reaches the downstream', () => {
    expect(issue('https://example.com/#access_token=abc')).toMatch(/^must not carry a fragment \(#…\): it is never sent to the downstream; the URL is shown/);
  });

  test.each(['api_key', 'API-Key', 'token', 'X-Amz-Signature', 'client_secret', 'sig', 'jwt', 'password'])(
    'the query parameter %s is refused, and named',
    (parameter) => {
      expect(issue(`https://example.com/?a=1&${parameter}=abc`)).toBe(
        `must not carry credentials (the query parameter "${parameter}"): the URL is shown to every key that may read the job type; let the downstream verify the signature headers made with the type's signing secret instead`,
      );
    },
  );

  test('a parameter that merely contains a credential word is fine', () => {
    expect(issue('https://example.com/?tokens_left=3&keyboard=us')).toBeUndefined();
  });
});

describe('urlWithoutCredentials (what admin keys see)', () => {
  test('a URL without credentials is shown as given', () => {
    expect(urlWithoutCredentials('https://example.com/a?b=1')).toBe('https://example.com/a?b=1');
  });

  test('text that is no URL is shown as given', () => {
    expect(urlWithoutCredentials('not a url')).toBe('not a url');
  });

  test('a URL without credentials is shown exactly as written, not as the URL parser would write it', () => {
    expect(urlWithoutCredentials('https://EXAMPLE.com')).toBe('https://EXAMPLE.com');
  });

  test('user and password are hidden', () => {
    expect(urlWithoutCredentials('https://user:secret@example.com/a')).toBe('https://***:***@example.com/a');
  });

  test('a user without a password is hidden, and no password is added', () => {
    expect(urlWithoutCredentials('https://user@example.com/a')).toBe('https://***@example.com/a');
  });

  test('only the values of credential parameters are hidden; the others are kept', () => {
    expect(urlWithoutCredentials('https://example.com/a?tenant=42&api_key=abc&Token=def')).toBe('https://example.com/a?tenant=42&api_key=***&Token=***');
  });

  test('a fragment is hidden', () => {
    expect(urlWithoutCredentials('https://example.com/a#access_token=abc')).toBe('https://example.com/a#***');
  });
});

describe('urlForReaders (what keys that only read the type see)', () => {
  test('every query value and the fragment are hidden; scheme, host, port and path are kept', () => {
    expect(urlForReaders('https://example.com:8443/a/b?tenant=42&mode=fast#part')).toBe('https://example.com:8443/a/b?tenant=***&mode=***#***');
  });

  test('a URL without a query or fragment is shown whole', () => {
    expect(urlForReaders('https://example.com/a')).toBe('https://example.com/a');
  });

  test('credentials are hidden too', () => {
    expect(urlForReaders('https://user:secret@example.com/?api_key=abc')).toBe('https://***:***@example.com/?api_key=***');
  });

  test('text that is no URL is shown as given', () => {
    expect(urlForReaders('not a url')).toBe('not a url');
  });
});
