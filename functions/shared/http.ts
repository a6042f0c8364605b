/**
 * HTTP as every side of the API writes it: the api function's responses and error body, the
 * authorizer's reading of the bearer token, and the local HTTP server's and API Gateway's own answers.
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { FieldIssue } from '../../lib/domain/errors.js';
import { ownEntry } from '../../lib/domain/own.js';

export type HttpEvent = APIGatewayProxyEventV2;
export type HttpResponse = APIGatewayProxyStructuredResultV2;

/**
 * A JSON answer. `nosniff`: a browser must not guess another type from what a caller put in the body
 * (job data, an error message) and, say, run it as a script or a page.
 */
export function json(statusCode: number, body: unknown): HttpResponse {
  return { statusCode, headers: { 'content-type': 'application/json', 'x-content-type-options': 'nosniff' }, body: JSON.stringify(body) };
}

export function errorBody(
  code: string,
  message: string,
  requestId: string | undefined,
  details: FieldIssue[] = [],
): Record<string, unknown> {
  return { error: { code, message, details, request_id: requestId ?? null } };
}

type WithHeaders = { headers?: Record<string, string | undefined> };

/** A request header by its lower-case name, whatever case the request gave it in. */
export function header(event: WithHeaders, name: string): string | undefined {
  const headers = event.headers ?? {};
  return ownEntry(headers, name) ?? Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
}

/** The token of an `Authorization: Bearer <token>` header, in an api or an authorizer event. */
export function bearerToken(event: WithHeaders): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header(event, 'authorization') ?? '');
  return match?.[1];
}
