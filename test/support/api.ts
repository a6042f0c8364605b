/**
 * Drives the api handler the way API Gateway (and the local runtime's HTTP
 * server) does: each call becomes an HTTP API v2 event shaped like
 * `toHttpApiEvent` in infra/local/http-server.ts, invoked with a minimal Lambda
 * context; the answer comes back as its status and parsed JSON body.
 */
import { randomUUID } from 'node:crypto';
import { QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { afterEach, beforeEach } from 'vitest';
import { createApiHandler } from '../../functions/api/app.js';
import type { ApiDeps } from '../../functions/api/routes/route.js';
import { createAuthorizer } from '../../functions/authorizer/app.js';
import { createLocalGateway } from '../../infra/local/aws/gateway.js';
import { httpApiEvent, lambdaContext } from '../../infra/local/http-server.js';
import { registry as builtinRegistry } from '../../functions/worker/handlers/index.js';
import type { QueueSettings } from '../../lib/queue/settings.js';
import { fixedSecret } from '../../lib/aws/secrets.js';
import type { WorkerRegistry } from '../../lib/queue/attempt/run-batch.js';
import { createTestQueue, type FunctionContexts, type TestQueue } from './queue.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

export type ApiHandler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;

export type HttpMethod = 'GET' | 'PUT' | 'POST' | 'DELETE' | 'PATCH' | 'HEAD' | 'OPTIONS';

export interface RequestOptions {
  /** A string is sent as is; anything else is sent as JSON. Absent: no body. */
  body?: unknown;
  /** Extra headers (names are lower-cased, as the local runtime does); they override the defaults. */
  headers?: Record<string, string>;
  /** The bearer token; `null` sends no Authorization header. @default the client's token */
  token?: string | null;
  /** Send the body base64-encoded with `isBase64Encoded: true`, as API Gateway does for binary bodies. */
  base64?: boolean;
}

export interface ApiResponse {
  status: number;
  /** The body parsed as JSON (undefined when empty). Typed loosely: tests assert on its shape. */
  body: any;
  /** The body exactly as the handler returned it. */
  text: string;
  headers: Record<string, unknown>;
}

/** An HTTP API (v2) event for one request, in the shape the local runtime's HTTP server produces. */
export function buildHttpApiEvent(
  method: HttpMethod,
  pathWithQuery: string,
  options: RequestOptions & { defaultToken?: string } = {},
): APIGatewayProxyEventV2 {
  const url = new URL(pathWithQuery, 'http://localhost');
  const headers: Record<string, string> = { host: 'localhost', 'user-agent': 'api-test' };
  let text: string | undefined;
  if (options.body !== undefined) {
    text = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(text, 'utf8'));
  }
  const token = options.token === undefined ? options.defaultToken : options.token;
  if (token !== null && token !== undefined) headers.authorization = `Bearer ${token}`;
  for (const [name, value] of Object.entries(options.headers ?? {})) headers[name.toLowerCase()] = value;

  const base64 = options.base64 === true;
  return httpApiEvent({
    method,
    url,
    headers,
    ...(text !== undefined ? { body: base64 ? Buffer.from(text, 'utf8').toString('base64') : text } : {}),
    isBase64Encoded: base64,
    requestId: randomUUID(),
    sourceIp: '127.0.0.1',
    protocol: 'HTTP/1.1',
  });
}

export interface ApiClient {
  handler: ApiHandler;
  request(method: HttpMethod, path: string, options?: RequestOptions): Promise<ApiResponse>;
  get(path: string, options?: RequestOptions): Promise<ApiResponse>;
  put(path: string, body?: unknown, options?: RequestOptions): Promise<ApiResponse>;
  post(path: string, body?: unknown, options?: RequestOptions): Promise<ApiResponse>;
  patch(path: string, body?: unknown, options?: RequestOptions): Promise<ApiResponse>;
  delete(path: string, options?: RequestOptions): Promise<ApiResponse>;
}

/** Calls `handler` as API Gateway would, sending `token` unless a call says otherwise. */
export function createApiClient(handler: ApiHandler, token: string = ADMIN_TOKEN): ApiClient {
  const request = async (method: HttpMethod, path: string, options: RequestOptions = {}): Promise<ApiResponse> => {
    const event = buildHttpApiEvent(method, path, { ...options, defaultToken: token });
    const result = await handler(event, lambdaContext(event.requestContext.requestId));
    const raw = result.body ?? '';
    const text = result.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw;
    return {
      status: result.statusCode ?? 200,
      body: text.length > 0 ? JSON.parse(text) : undefined,
      text,
      headers: { ...(result.headers ?? {}) },
    };
  };
  const withBody = (body: unknown, options: RequestOptions = {}): RequestOptions =>
    body === undefined ? options : { ...options, body };
  return {
    handler,
    request,
    get: (path, options) => request('GET', path, options),
    put: (path, body, options) => request('PUT', path, withBody(body, options)),
    post: (path, body, options) => request('POST', path, withBody(body, options)),
    patch: (path, body, options) => request('PATCH', path, withBody(body, options)),
    delete: (path, options) => request('DELETE', path, options),
  };
}

/**
 * The api handler behind the authorizer, as API Gateway runs them, each on the
 * queue as its own role sees it, with the worker's built-in registry unless
 * another is given. `adminToken` is the authorizer's API_TOKEN, so it needs no
 * key in the table.
 */
export function createTestApi(
  queue: FunctionContexts,
  options: { registry?: WorkerRegistry; adminToken?: string; callbackTokenSecret?: string; alarms?: ApiDeps['alarms'] } = {},
): ApiClient {
  const adminToken = options.adminToken ?? ADMIN_TOKEN;
  const authorizer = createAuthorizer({
    ctx: queue.as('authorizer'),
    staticAdminToken: adminToken,
    ...(options.callbackTokenSecret ? { callbackTokenSecret: fixedSecret(options.callbackTokenSecret) } : {}),
  });
  const api = createApiHandler({ ctx: queue.as('api'), registry: options.registry ?? builtinRegistry, ...(options.alarms ? { alarms: options.alarms } : {}) }) as ApiHandler;
  // The gateway keeps the authorizer's answers by the queue's clock, so a test can move past their TTL.
  const nowMs = () => queue.as('api').nowMs();
  return createApiClient(createLocalGateway({ authorizer, api, nowMs }), adminToken);
}

export interface ApiFixture {
  queue: TestQueue;
  api: ApiClient;
}

/** A fresh table, manual clock and api handler for every test, dropped after it. */
export function freshApiPerTest(options: { settings?: Partial<QueueSettings> } = {}): () => ApiFixture {
  let fixture: ApiFixture | undefined;
  beforeEach(async () => {
    const queue = await createTestQueue(options.settings ? { settings: options.settings } : {});
    fixture = { queue, api: createTestApi(queue) };
  });
  afterEach(async () => {
    await fixture?.queue.drop();
    fixture = undefined;
  });
  return () => {
    if (!fixture) throw new Error('the api fixture exists only inside a test');
    return fixture;
  };
}

/** Every item in the table, store attributes included, so a test can prove a request changed nothing. */
export async function tableItems(queue: TestQueue): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await queue.clients.db.send(
      new ScanCommand({ TableName: queue.tableName, ConsistentRead: true, ExclusiveStartKey: startKey }),
    );
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items.sort((a, b) => `${String(a.pk)}|${String(a.sk)}`.localeCompare(`${String(b.pk)}|${String(b.sk)}`));
}

/** The items stored under one partition key (a job is `JOB#<type>#<id>`). */
export async function itemsWithPk(queue: TestQueue, pk: string): Promise<Record<string, unknown>[]> {
  const { Items } = await queue.clients.db.send(
    new QueryCommand({
      TableName: queue.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pk },
      ConsistentRead: true,
    }),
  );
  return Items ?? [];
}

/** True when an error body leaks an implementation detail: a stack frame or a dependency path. */
export function leaksInternals(text: string): boolean {
  return /\bat\s+(?:\S+\s+\()?(?:file:\/\/|node:|\/|[A-Za-z]:\\)/.test(text) || text.includes('node_modules');
}
