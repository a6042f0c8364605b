/**
 * Serves HTTP by turning each request into an API Gateway HTTP API (v2) event
 * for the same `api` handler Lambda runs, and its result back into a response.
 */
import { randomUUID } from 'node:crypto';
import { isUtf8 } from 'node:buffer';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { errorBody, json } from '../../functions/shared/http.js';
import { log } from '../../functions/shared/log.js';

export type ApiHandler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;

/** API Gateway refuses larger payloads before they reach the function; so do we. */
const MAX_REQUEST_BYTES = 10 * 1024 * 1024;

async function readBody(request: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_REQUEST_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** One request as API Gateway's HTTP API (payload 2.0) hands it to a function on its `$default` route. */
export function httpApiEvent(request: {
  method: string;
  url: URL;
  /** Lower-cased names. */
  headers: Record<string, string>;
  body?: string;
  isBase64Encoded: boolean;
  requestId: string;
  sourceIp: string;
  protocol: string;
}): APIGatewayProxyEventV2 {
  const { url, headers } = request;
  // A Map, so a parameter named like an object's member ("toString", "__proto__") is a parameter like any other.
  const query = new Map<string, string>();
  for (const [name, value] of url.searchParams) query.set(name, query.has(name) ? `${query.get(name)},${value}` : value);
  const nowMs = Date.now();
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    headers,
    ...(query.size > 0 ? { queryStringParameters: Object.fromEntries(query) } : {}),
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: 'localhost',
      http: {
        method: request.method,
        path: url.pathname,
        protocol: request.protocol,
        sourceIp: request.sourceIp,
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: request.requestId,
      routeKey: '$default',
      stage: '$default',
      time: new Date(nowMs).toISOString(),
      timeEpoch: nowMs,
    },
    ...(request.body !== undefined && request.body.length > 0 ? { body: request.body } : {}),
    isBase64Encoded: request.isBase64Encoded,
  };
}

export function toHttpApiEvent(request: IncomingMessage, body: Buffer, requestId: string): APIGatewayProxyEventV2 {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  }
  // A body that is not UTF-8 goes to the api as the bytes it was, base64-encoded, so the api can refuse it
  // (functions/api/http.ts) rather than be handed text with U+FFFD where its bytes were.
  const isText = body.length === 0 || (/json|text/i.test(headers['content-type'] ?? '') && isUtf8(body));
  return httpApiEvent({
    method: request.method ?? 'GET',
    url: new URL(request.url ?? '/', 'http://localhost'),
    headers,
    body: isText ? body.toString('utf8') : body.toString('base64'),
    isBase64Encoded: !isText,
    requestId,
    sourceIp: request.socket.remoteAddress ?? '127.0.0.1',
    protocol: `HTTP/${request.httpVersion}`,
  });
}

/** The least of a Lambda context a handler may touch, for a handler invoked in-process. */
export function lambdaContext(requestId: string): Context {
  const deadline = Date.now() + 30_000;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: 'api',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:local:000000000000:function:api',
    memoryLimitInMB: '512',
    awsRequestId: requestId,
    logGroupName: 'local',
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/** One of the server's own answers, made by json() as the api's are, so it carries the same headers (nosniff too). */
function writeOwnAnswer(response: ServerResponse, answer: APIGatewayProxyStructuredResultV2): void {
  if (!response.headersSent) response.writeHead(answer.statusCode ?? 500, answer.headers as Record<string, string>);
  response.end(answer.body);
}

export function createHttpServer(handler: ApiHandler): Server {
  return createServer((request, response) => {
    const requestId = randomUUID();
    void (async () => {
      const body = await readBody(request);
      if (body === undefined) {
        writeOwnAnswer(response, json(413, errorBody('payload_too_large', 'the request is too large', requestId)));
        return;
      }
      const result = await handler(toHttpApiEvent(request, body, requestId), lambdaContext(requestId));
      const headers = { ...(result.headers ?? {}), 'x-request-id': requestId };
      response.writeHead(result.statusCode ?? 200, headers as Record<string, string>);
      response.end(result.isBase64Encoded && result.body ? Buffer.from(result.body, 'base64') : (result.body ?? ''));
    })().catch((error: unknown) => {
      log('error', 'request failed', { requestId, error });
      writeOwnAnswer(response, json(500, errorBody('internal', 'internal error', requestId)));
    });
  });
}
