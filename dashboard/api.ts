/** Calls to the JSON API of the page's own origin. */
import { isRefusedKey } from '../lib/client/errors.js';
import type { FieldIssue } from './types.js';

export * from './types.js';

/** An answer other than 2xx, with the API's error code and the fields it named. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: FieldIssue[],
    /** The key itself was refused (missing, unknown, revoked or expired), not merely short of a scope. */
    readonly keyRefused: boolean,
  ) {
    super(message);
  }

  /** The message with the fields it names, as a person reads it. */
  describe(): string {
    const fields = this.details.map((issue) => `${issue.field} ${issue.message}`).join('; ');
    return fields ? `${this.message}: ${fields}` : this.message;
  }
}

export interface Api {
  get<T>(path: string): Promise<T>;
  /** `body`, when given, is sent as JSON. */
  post<T>(path: string, body?: unknown): Promise<T>;
  delete<T>(path: string): Promise<T>;
}

/** Path segments are encoded here, once: job ids and type names come from user input. */
export const apiPath = (...segments: string[]): string => segments.map(encodeURIComponent).join('/');

/**
 * Calls the API of the page's own origin with the key in the Authorization
 * header, never in a URL. Paths are relative, so the dashboard also works
 * under a base path (a custom domain mapping, say).
 */
export function createApi(key: string, onKeyRefused: (error: ApiError) => void): Api {
  const call = async <T>(method: string, path: string, sent?: unknown): Promise<T> => {
    const response = await fetch(path, {
      method,
      headers: { authorization: `Bearer ${key}`, accept: 'application/json', ...(sent !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(sent !== undefined ? { body: JSON.stringify(sent) } : {}),
      cache: 'no-store',
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
    });
    const text = await response.text();
    const body: unknown = text.length > 0 ? safeJson(text) : undefined;
    if (response.ok) return body as T;
    const error = errorOf(response.status, body);
    if (error.keyRefused) onKeyRefused(error);
    throw error;
  };
  return {
    get: (path) => call('GET', path),
    post: (path, body) => call('POST', path, body),
    delete: (path) => call('DELETE', path),
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function errorOf(status: number, body: unknown): ApiError {
  const error = (body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | undefined)?.error;
  const code = typeof error?.code === 'string' ? error.code : `http_${status}`;
  const message = typeof error?.message === 'string' ? error.message : `the API answered ${status}`;
  const details = Array.isArray(error?.details)
    ? (error.details as unknown[]).filter((issue): issue is FieldIssue => typeof (issue as FieldIssue)?.field === 'string')
    : [];
  return new ApiError(status, code, message, details, isRefusedKey(status, body));
}
