/** Request parsing for the api function: the JSON body and path parameters, each refused with the field it names. */
import { PayloadTooLargeError, UnsupportedMediaTypeError, ValidationError, type FieldIssue } from '../../lib/domain/errors.js';
import { header, type HttpEvent } from '../shared/http.js';

/** A request body may carry 256 KiB of job data plus its envelope. */
export const MAX_BODY_BYTES = 300 * 1024;

/**
 * A batch body may be larger, within what Lambda takes and gives back
 * synchronously (6 MB each way, API Gateway's 10 MB never reached): the
 * event carries the body JSON-escaped, at worst twice its size, and the answer
 * repeats each job's data, so 2 MiB in stays under 6 MB both ways.
 */
export const MAX_BATCH_BODY_BYTES = 2 * 1024 * 1024;

/**
 * The text of a body that came as bytes, refused unless it is UTF-8: decoding it
 * leniently would replace each bad byte with U+FFFD and store what the caller never sent.
 */
function utf8Text(bytes: Buffer): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new ValidationError([{ field: 'body', message: 'is not valid UTF-8' }]);
  }
}

/**
 * The JSON body: 415 unless it is declared JSON in UTF-8, 413 over the cap, 400
 * naming `body` when it is not UTF-8, does not parse or nests too deep, and 400 naming the
 * field for a key given twice in one object, a `__proto__` key or a number beyond a double.
 *
 * API Gateway hands the function a body of a text type (`application/json`, `text/*`) as a string and
 * any other type base64-encoded with `isBase64Encoded`; so does the local server, which also passes a
 * text-typed body that is not UTF-8 as bytes, so that it is refused here. Only bytes can be checked:
 * a string has already been decoded by whoever made it.
 */
export function parseJsonBody(event: HttpEvent, maxBytes: number = MAX_BODY_BYTES): unknown {
  const raw = event.body ?? '';
  if (raw.length === 0) return {};
  const contentType = header(event, 'content-type') ?? '';
  if (!/^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(contentType)) {
    throw new UnsupportedMediaTypeError('the body must be JSON, sent with content-type: application/json');
  }
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType)?.[1];
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
    throw new UnsupportedMediaTypeError('the body must be UTF-8 JSON');
  }
  const sent = event.isBase64Encoded ? Buffer.from(raw, 'base64') : undefined;
  const bytes = sent ? sent.length : Buffer.byteLength(raw, 'utf8');
  if (bytes > maxBytes) {
    throw new PayloadTooLargeError('body', `the body is ${bytes} bytes; the limit is ${maxBytes}`);
  }
  const text = sent ? utf8Text(sent) : raw;
  if (text.length === 0) return {};
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ValidationError([{ field: 'body', message: 'is not valid JSON' }]);
  }
  if (depthExceeds(body, MAX_BODY_DEPTH)) {
    throw new ValidationError([{ field: 'body', message: `is nested deeper than ${MAX_BODY_DEPTH} levels` }]);
  }
  const bodyIssue = findBodyIssue(text);
  if (bodyIssue) throw new ValidationError([bodyIssue]);
  return body;
}

/**
 * JSON.parse keeps the last of duplicated keys, turns numbers beyond a double
 * into Infinity, and `__proto__` keys are dropped on the way through
 * validation: each would silently change what the caller meant, so each is
 * refused instead, naming the field. Walks text that JSON.parse already accepted,
 * nested at most MAX_BODY_DEPTH deep, so it can be this simple.
 */
export function findBodyIssue(text: string): FieldIssue | undefined {
  let at = 0;
  const skipSpace = () => {
    while (at < text.length && ' \t\n\r'.includes(text[at]!)) at++;
  };
  /** Moves past the string starting at `at`; returns its text with escapes resolved. */
  const readString = (): string => {
    const start = at++;
    while (text[at] !== '"') at += text[at] === '\\' ? 2 : 1;
    at++;
    return JSON.parse(text.slice(start, at)) as string;
  };
  const value = (path: string[]): FieldIssue | undefined => {
    skipSpace();
    const opening = text[at];
    if (opening === '{' || opening === '[') {
      at++;
      const seen = new Set<string>();
      for (let index = 0; ; index++) {
        skipSpace();
        if (text[at] === '}' || text[at] === ']') {
          at++;
          return undefined;
        }
        if (text[at] === ',') {
          at++;
          skipSpace();
        }
        let childPath = [...path, String(index)];
        if (opening === '{') {
          const key = readString();
          childPath = [...path, key];
          if (key === '__proto__') return { field: childPath.join('.'), message: 'is not allowed as a key' };
          if (seen.has(key)) return { field: childPath.join('.'), message: 'is given more than once' };
          seen.add(key);
          skipSpace();
          at++; // the colon
        }
        const issue = value(childPath);
        if (issue) return issue;
      }
    }
    if (opening === '"') {
      readString();
      return undefined;
    }
    const start = at;
    while (at < text.length && !',]} \t\n\r'.includes(text[at]!)) at++;
    const literal = text.slice(start, at);
    if (/^-?\d/.test(literal) && !Number.isFinite(Number(literal))) {
      return { field: path.join('.') || 'body', message: 'is a number too large to represent' };
    }
    return undefined;
  };
  return value([]);
}

/** Validation and serialisation recurse; a bound on depth keeps a hostile body from exhausting the stack. */
export const MAX_BODY_DEPTH = 100;

function depthExceeds(value: unknown, maxDepth: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (typeof current !== 'object' || current === null) continue;
    if (depth >= maxDepth) return true;
    for (const child of Object.values(current)) stack.push([child, depth + 1]);
  }
  return false;
}

/** A path parameter, URL-decoded and checked against its pattern; a mismatch is a 400 naming it. */
export function pathParam(event: HttpEvent, name: string, pattern: RegExp): string {
  const raw = event.pathParameters?.[name] ?? '';
  let value: string;
  try {
    value = decodeURIComponent(raw);
  } catch {
    throw new ValidationError([{ field: name, message: 'is not valid URL encoding' }]);
  }
  if (!pattern.test(value)) {
    throw new ValidationError([{ field: name, message: `must match ${pattern.source}` }]);
  }
  return value;
}
