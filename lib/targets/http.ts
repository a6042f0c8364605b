/**
 * The `http` target: POSTs `{id, type, attempt, data, callback_url}`, signed
 * with the type's secret (lib/signing.ts), and maps the answer:
 *   202 → awaiting the callback; other 2xx → succeeded (`{"result": ...}` kept);
 *   408, 429 → failed, retried (Retry-After honoured); other 4xx → failed, not retried;
 *   5xx, timeouts and connection errors → failed, retried.
 * Redirects are not followed: a redirect could lead to an address the check refused.
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { callbackUrl } from '../domain/callback-tokens.js';
import { MAX_RESULT_BYTES } from '../domain/job.js';
import { signedHeaders } from '../domain/signing.js';
import { addressRefusal, LOCAL_TARGET_ADDRESSES, literalAddressOf, resolveWithSystemDns, type ResolveHost, type ResolvedAddress, type TargetAddressPolicy } from './addresses.js';
import type { SecretSource } from '../aws/secrets.js';
import { failed, jobEnvelope, type TargetOutcome, type TargetRun } from './target.js';

export interface HttpTargetDeps {
  /** The API's public base URL, for the `callback_url` downstreams call back. */
  apiBaseUrl: string;
  /** Signs the callback URL's token with its current value. */
  callbackTokenSecret: SecretSource;
  /** @default the system resolver */
  resolveHost?: ResolveHost;
  /**
   * The addresses requests may go to besides public ones. Deployed workers refuse loopback
   * (functions/shared/environment.ts).
   * @default LOCAL_TARGET_ADDRESSES: loopback and private addresses allowed, as the local runtime needs
   */
  addressPolicy?: TargetAddressPolicy;
}

/** A body past this cannot carry a result the job may keep, so reading stops there. */
const MAX_RESPONSE_BYTES = MAX_RESULT_BYTES + 1024;
/** A Retry-After further out than this is taken as this. */
const MAX_RETRY_AFTER_MS = 86_400_000;

interface HttpAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  truncated: boolean;
}

class RequestTimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

class AddressRefusedError extends Error {
  override readonly name = 'AddressRefusedError';
}

/** The addresses to connect to, checked; throws AddressRefusedError when any one of them is refused. */
async function checkedAddresses(url: URL, allowLinkLocal: boolean, policy: TargetAddressPolicy, resolveHost: ResolveHost): Promise<ResolvedAddress[] | undefined> {
  const literal = literalAddressOf(url);
  const addresses = literal !== undefined ? [{ address: literal, family: literal.includes(':') ? 6 : 4 } as const] : await resolveHost(url.hostname);
  if (addresses.length === 0) throw new Error(`${url.hostname} resolved to no address`);
  const host = literal ?? url.hostname;
  for (const { address } of addresses) {
    const refusal = addressRefusal(host, address, policy, allowLinkLocal);
    if (refusal !== undefined) throw new AddressRefusedError(refusal);
  }
  // A literal needs no lookup; a name is pinned to the addresses that passed the check.
  return literal !== undefined ? undefined : addresses;
}

/** Node asks for every address when it races IPv6 against IPv4 (autoSelectFamily), else for one. */
function pinnedLookup(addresses: ResolvedAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) (callback as (error: null, all: ResolvedAddress[]) => void)(null, addresses);
    else callback(null, addresses[0]!.address, addresses[0]!.family);
  };
}

function post(url: URL, headers: Record<string, string>, body: string, options: { pinned: ResolvedAddress[] | undefined; timeoutMs: number; signal: AbortSignal }): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const request = send(url, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body, 'utf8')) },
      ...(options.pinned ? { lookup: pinnedLookup(options.pinned) } : {}),
    });
    // Whatever error the destroyed socket reports, the attempt failed for the reason that destroyed it.
    let stoppedBy: Error | undefined;
    const stop = (reason: Error): void => {
      stoppedBy ??= reason;
      request.destroy(reason);
    };
    const timer = setTimeout(() => stop(new RequestTimeoutError(`no complete answer within ${options.timeoutMs} ms`)), options.timeoutMs);
    const onAbort = (): void => stop(options.signal.reason instanceof Error ? options.signal.reason : new Error('the attempt was aborted'));
    options.signal.addEventListener('abort', onAbort, { once: true });
    const fail = (error: Error): void => {
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
      reject(stoppedBy ?? error);
    };
    const settle = (): void => {
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
    };
    request.on('error', fail);
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let truncated = false;
      response.on('data', (chunk: Buffer) => {
        if (truncated) return;
        size += chunk.length;
        if (size > MAX_RESPONSE_BYTES) truncated = true;
        else chunks.push(chunk);
      });
      response.on('error', fail);
      response.on('end', () => {
        settle();
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString('utf8'), truncated });
      });
    });
    request.end(body);
  });
}

/** Retry-After in seconds or as an HTTP date, in ms from now; undefined when absent or unreadable. */
export function retryAfterMs(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const trimmed = value.trim();
  const ms = /^\d+$/.test(trimmed) ? Number(trimmed) * 1000 : Date.parse(trimmed) - nowMs;
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(Math.max(0, ms), MAX_RETRY_AFTER_MS);
}

function resultOf(body: string): unknown {
  try {
    const parsed: unknown = JSON.parse(body);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) && 'result' in parsed ? parsed.result : undefined;
  } catch {
    return undefined;
  }
}

/** What the answer means for the attempt. */
export function outcomeOfAnswer(answer: HttpAnswer, where: string, nowMs: number): TargetOutcome {
  const { status } = answer;
  if (status === 202) return { kind: 'awaiting_callback' };
  if (status >= 200 && status < 300) {
    if (answer.truncated) return failed('ResultTooLargeError', `the answer is over ${MAX_RESPONSE_BYTES} bytes`, { retryable: false });
    const result = resultOf(answer.body);
    return result === undefined ? { kind: 'succeeded' } : { kind: 'succeeded', result };
  }
  const snippet = answer.body.slice(0, 200);
  const message = `POST ${where} answered ${status}${snippet ? `: ${snippet}` : ''}`;
  const header = answer.headers['retry-after'];
  const delayMs = retryAfterMs(Array.isArray(header) ? header[0] : header, nowMs);
  const retryAfter = delayMs !== undefined ? { retryAfterMs: delayMs } : {};
  if (status === 408 || status === 429 || status >= 500) return failed('HttpError', message, { httpStatus: status, ...retryAfter });
  if (status >= 300 && status < 400) return failed('HttpError', `${message} (redirects are not followed)`, { httpStatus: status, retryable: false });
  return failed('HttpError', message, { httpStatus: status, retryable: false });
}

function outcomeOfError(error: unknown, where: string): TargetOutcome {
  if (error instanceof AddressRefusedError) return failed(error.name, error.message, { retryable: false });
  if (error instanceof RequestTimeoutError) return failed(error.name, `POST ${where}: ${error.message}`);
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  return failed('ConnectionError', `POST ${where}: ${typeof code === 'string' ? `${code} ` : ''}${message}`.trim());
}

export async function runHttpTarget(
  run: TargetRun,
  target: { url: string; requestTimeoutS: number; allowLinkLocal: boolean },
  signingSecret: string,
  deps: HttpTargetDeps,
): Promise<TargetOutcome> {
  const url = new URL(target.url);
  // The query string may carry credentials of the downstream's own; errors name only where the request went.
  const where = `${url.origin}${url.pathname}`;
  const { current: callbackTokenSecret } = await deps.callbackTokenSecret.versions();
  const body = JSON.stringify({
    ...jobEnvelope(run.job, run.traceparent),
    callback_url: callbackUrl(deps.apiBaseUrl, callbackTokenSecret, run.job),
  });
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'delayed-job-queue',
    ...(run.traceparent !== undefined ? { traceparent: run.traceparent } : {}),
    ...signedHeaders(signingSecret, Math.floor(run.nowMs() / 1000), body),
  };
  try {
    const pinned = await checkedAddresses(url, target.allowLinkLocal, deps.addressPolicy ?? LOCAL_TARGET_ADDRESSES, deps.resolveHost ?? resolveWithSystemDns);
    const answer = await post(url, headers, body, { pinned, timeoutMs: target.requestTimeoutS * 1000, signal: run.signal });
    return outcomeOfAnswer(answer, where, run.nowMs());
  } catch (error) {
    return outcomeOfError(error, where);
  }
}
