/**
 * The client's remaining routes: API keys (scope admin), the Jobber-format enqueue, health and the API's own
 * description. With index.ts and schedules.ts it covers every operation the api serves.
 */
import type { Requester } from './transport.js';
import { wireBody } from './wire.js';
import type { ApiKey, CreatedApiKey, Json, OpenApiDocument } from './types.js';

export interface AdminMethods {
  /** `POST /v1/keys`: a new key; its secret (`key`) is in this answer only. Not retried: a repeat makes a second key. */
  createKey(body: { scopes: string[]; name?: string; expires_at?: Date | string }): Promise<CreatedApiKey>;
  /** Every key, never a secret. */
  listKeys(): Promise<ApiKey[]>;
  /** Revokes a key; it stops working within the authorizer's cache time (30 s on AWS). Retried. */
  revokeKey(id: string): Promise<ApiKey>;
  /** `POST /jobber/queue`: enqueues `payload` as the data of a job of `type`, under a new server id. Not retried. */
  jobberQueue(type: string, payload?: Json): Promise<{ 'job-id': string }>;
  /** `GET /health`: whether the API answers (no key needed). */
  health(): Promise<{ status: 'ok' }>;
  /** `GET /openapi.json`: the API as OpenAPI 3.1 (no key needed). */
  openApi(): Promise<OpenApiDocument>;
}

export function adminMethods(request: Requester): AdminMethods {
  return {
    createKey: (body) => request({ method: 'POST', path: ['v1', 'keys'], body: wireBody(body), idempotent: false }),
    listKeys: async () => (await request<{ keys: ApiKey[] }>({ method: 'GET', path: ['v1', 'keys'], idempotent: true })).keys,
    revokeKey: (id) => request({ method: 'DELETE', path: ['v1', 'keys', id], idempotent: true }),
    jobberQueue: (type, payload = null) => request({ method: 'POST', path: ['jobber', 'queue'], body: { type, payload }, idempotent: false }),
    health: () => request({ method: 'GET', path: ['health'], idempotent: true }),
    openApi: () => request({ method: 'GET', path: ['openapi.json'], idempotent: true }),
  };
}
