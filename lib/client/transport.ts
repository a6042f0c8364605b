/** Sending one call to the API: its URL, the key, JSON both ways, and retries of the calls that are safe to repeat. */
import { apiErrorFrom, QueueNetworkError } from './errors.js';
import { retryAfterMsOf, retryPolicyOf, retryWaitMs, shouldRetry, type RetryPolicy, type TryFailure } from './retry.js';

export interface ClientOptions {
  /** The API's base URL, e.g. `http://localhost:3000` or the stack's `ApiUrl` output. */
  url: string;
  /**
   * An API key with the scopes of the calls made (`enqueue:<type>`, `read:<type>`, `callback:<type>`, `admin`).
   * A downstream holding only a job's `callback_url` posts to that URL instead: its token travels in the query.
   */
  token: string;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /** Retries of requests that are safe to repeat: a count, or a policy. 0 turns retries off. @default 3 */
  retries?: number | Partial<RetryPolicy>;
  /** How long one try may take before it counts as a network error. @default 30000 */
  timeoutMs?: number;
  /** @default Math.random (tests make the backoff predictable) */
  random?: () => number;
  /** @default a timer */
  sleep?: (ms: number) => Promise<void>;
}

type Method = 'GET' | 'PUT' | 'POST' | 'PATCH' | 'DELETE';

export interface Call {
  method: Method;
  /** Path segments, each encoded here. */
  path: string[];
  query?: Record<string, string | number | undefined | null>;
  body?: unknown;
  /** Headers of its own beside the key and content type, e.g. `traceparent`. */
  headers?: Record<string, string>;
  /** Safe to send again: it names what it changes, so a second copy changes nothing more. */
  idempotent: boolean;
}

export type Requester = <T>(call: Call) => Promise<T>;

const defaultSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The body as JSON; a body that is not JSON (a proxy's HTML page, say) is no body at all. */
function parseJson(text: string): unknown {
  try {
    return text.length > 0 ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

export function createRequester(options: ClientOptions): Requester {
  const baseUrl = options.url.replace(/\/+$/, '');
  // Called through globalThis when not given: a browser's fetch refuses to run detached from window.
  const fetchImpl: (url: string, init: RequestInit) => Promise<Response> = options.fetch ?? ((url, init) => globalThis.fetch(url, init));
  const policy = retryPolicyOf(options.retries);
  const timeoutMs = options.timeoutMs ?? 30_000;
  const random = options.random ?? Math.random;
  const sleep = options.sleep ?? defaultSleep;

  const urlOf = (call: Call): string => {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(call.query ?? {})) if (value !== undefined && value !== null) query.set(name, String(value));
    const search = query.toString() === '' ? '' : `?${query}`;
    return `${baseUrl}/${call.path.map(encodeURIComponent).join('/')}${search}`;
  };

  return async function request<T>(call: Call): Promise<T> {
    const url = urlOf(call);
    const headers: Record<string, string> = { ...call.headers, authorization: `Bearer ${options.token}`, accept: 'application/json' };
    const body = call.body === undefined ? undefined : JSON.stringify(call.body);
    if (body !== undefined) headers['content-type'] = 'application/json';
    for (let tries = 1; ; tries++) {
      let failure: TryFailure;
      let error: Error;
      try {
        const response = await fetchImpl(url, { method: call.method, headers, body, signal: AbortSignal.timeout(timeoutMs) });
        const parsed = parseJson(await response.text());
        if (response.ok) return parsed as T;
        const retryAfterMs = retryAfterMsOf(response.headers.get('retry-after'));
        failure = retryAfterMs === undefined ? { status: response.status } : { status: response.status, retryAfterMs };
        error = apiErrorFrom(response.status, parsed, tries, response.headers.get('x-request-id'));
      } catch (thrown) {
        failure = { status: undefined };
        const reason = thrown instanceof Error && thrown.name === 'TimeoutError' ? `timed out after ${timeoutMs} ms` : 'failed';
        error = new QueueNetworkError(`${call.method} ${url} ${reason}`, tries, { cause: thrown });
      }
      if (!shouldRetry({ idempotent: call.idempotent, failure, triesSoFar: tries, policy })) throw error;
      await sleep(retryWaitMs(tries - 1, failure, policy, random));
    }
  };
}
