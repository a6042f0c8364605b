/**
 * The API as an OpenAPI 3.1 document, generated from the operations table and the zod schemas its routes
 * validate with (zod's own JSON Schema output, draft 2020-12, which OpenAPI 3.1 uses as is).
 */
import { z } from 'zod';
import { KEY_ID_PATTERN } from '../../lib/domain/api-key.js';
import { CORRELATION_KEY_PATTERN, JOB_ID_PATTERN } from '../../lib/domain/job.js';
import { JOB_TYPE_NAME_PATTERN } from '../../lib/domain/job-type.js';
import { SCHEDULE_NAME_PATTERN } from '../../lib/domain/schedule.js';
import { apiErrorSchema, gatewayRefusalSchema } from '../../lib/wire/api-errors.js';
import type { Access } from './access.js';
import { OPERATIONS, type Operation, type SuccessStatus } from './operations.js';

export const API_VERSION = '0.1.0';

type JsonSchema = Record<string, unknown>;

/** Each path parameter's pattern, as the routes check it; `/v1/keys/{id}` names a key and `/v1/schedules/{name}` a schedule. */
function parameterPattern(path: string, name: string): RegExp {
  if (path.startsWith('/v1/keys/')) return KEY_ID_PATTERN;
  if (path.startsWith('/v1/schedules/')) return SCHEDULE_NAME_PATTERN;
  switch (name) {
    case 'type':
    case 'name':
      return JOB_TYPE_NAME_PATTERN;
    case 'correlation_key':
      return CORRELATION_KEY_PATTERN;
    default:
      return JOB_ID_PATTERN;
  }
}

/**
 * One schema as JSON Schema, its named parts (zod `.meta({ id })`) moved into `components` and referenced
 * there: a `#/$defs/...` reference inside the document would resolve against the document's root. A request
 * is described as it is accepted (`input`: defaults optional), an answer as it is written (`output`).
 */
function schemaOf(schema: z.ZodType, components: Record<string, JsonSchema>, io: 'input' | 'output'): JsonSchema {
  const { $schema: _draft, $defs, ...json } = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as JsonSchema;
  const toComponents = (value: JsonSchema): JsonSchema =>
    JSON.parse(JSON.stringify(value).replaceAll('"#/$defs/', '"#/components/schemas/')) as JsonSchema;
  for (const [name, definition] of Object.entries(($defs ?? {}) as Record<string, JsonSchema>)) {
    if (name.startsWith('__')) throw new Error(`a schema the api documents shares an unnamed part (${name}): give it a .meta({ id })`);
    const described = toComponents(definition);
    // A named part with defaults reads differently accepted and written: it needs a name for each.
    if (Object.hasOwn(components, name) && JSON.stringify(components[name]) !== JSON.stringify(described)) {
      throw new Error(`the schema named ${name} is described two ways (as a request and as an answer): name each its own`);
    }
    components[name] = described;
  }
  return toComponents(json);
}

function pathParameters(path: string): JsonSchema[] {
  return [...path.matchAll(/\{([^}]+)\}/g)].map(([, name = '']) => ({
    name,
    in: 'path',
    required: true,
    schema: { type: 'string', pattern: parameterPattern(path, name).source },
  }));
}

function queryParameters(query: z.ZodType | undefined, components: Record<string, JsonSchema>): JsonSchema[] {
  if (!query) return [];
  const json = schemaOf(query, components, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, schema]) => ({ name, in: 'query', required: json.required?.includes(name) ?? false, schema }));
}

const SUCCESS: Record<SuccessStatus, string> = { 200: 'Success', 201: 'Created', 202: 'Accepted: it runs in the background' };

const ERROR_REF = { $ref: '#/components/schemas/Error' };
/** API Gateway answers a refused key by itself, in its own shape; the api answers a scope the key lacks. */
const REFUSED_OR_ERROR = { anyOf: [ERROR_REF, { $ref: '#/components/schemas/GatewayRefusal' }] };

/** The error answers of an operation that needs a key; 413 and 415 only where there is a body to refuse. */
const ERROR_STATUSES: { status: number; description: string; schema: JsonSchema; bodyOnly?: true }[] = [
  { status: 400, description: 'The request is invalid: `details` name each field', schema: ERROR_REF },
  { status: 401, description: 'No key', schema: REFUSED_OR_ERROR },
  { status: 403, description: 'The key is refused (API Gateway’s answer), or its scopes do not cover this (the api’s)', schema: REFUSED_OR_ERROR },
  { status: 404, description: 'Not found', schema: ERROR_REF },
  { status: 409, description: 'In conflict with the current state', schema: ERROR_REF },
  { status: 413, description: 'Too large: `details` name the field', schema: ERROR_REF, bodyOnly: true },
  { status: 415, description: 'Not JSON', schema: ERROR_REF, bodyOnly: true },
  { status: 429, description: 'Too many requests at once (API Gateway’s answer): nothing was done; try again after `Retry-After` seconds', schema: REFUSED_OR_ERROR },
  { status: 500, description: 'Internal error: the body never says more', schema: ERROR_REF },
  { status: 503, description: 'DynamoDB is overloaded or unreachable for now: try again after `Retry-After` seconds (a request that names what it changes is safe to repeat)', schema: ERROR_REF },
];

function security(access: Access): JsonSchema[] {
  if (access.kind === 'public') return [];
  // A status callback also takes the callback token its callback_url carries, in place of a key.
  return access.kind === 'callback' ? [{ apiKey: [] }, { callbackToken: [] }] : [{ apiKey: [] }];
}

function errorResponses(operation: Operation): [string, JsonSchema][] {
  const errors = ERROR_STATUSES.filter(({ status, bodyOnly }) =>
    operation.access.kind === 'public' ? status === 500 : !bodyOnly || operation.body !== undefined,
  );
  return errors.map(({ status, description, schema }) => [String(status), { description, content: { 'application/json': { schema } } }]);
}

function operationObject(operation: Operation, components: Record<string, JsonSchema>): JsonSchema {
  const successes = Object.entries(operation.responses).map(([status, schema]) => [
    status,
    { description: SUCCESS[Number(status) as SuccessStatus], content: { 'application/json': { schema: schemaOf(schema, components, 'output') } } },
  ]);
  return {
    operationId: operation.route,
    summary: operation.summary,
    security: security(operation.access),
    parameters: [
      ...pathParameters(operation.path),
      ...queryParameters(operation.query, components),
      ...(operation.headers ?? []).map(({ name, description, pattern }) => ({ name, in: 'header', required: false, description, schema: { type: 'string', pattern } })),
    ],
    ...(operation.body ? { requestBody: { required: true, content: { 'application/json': { schema: schemaOf(operation.body, components, 'input') } } } } : {}),
    responses: Object.fromEntries([...successes, ...errorResponses(operation)]),
  };
}

export function openApiDocument(operations: readonly Operation[] = OPERATIONS): JsonSchema {
  const schemas: Record<string, JsonSchema> = {};
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const operation of operations) {
    paths[operation.path] = { ...paths[operation.path], [operation.method.toLowerCase()]: operationObject(operation, schemas) };
  }
  // A named schema comes out as a reference to its component, which is what the error answers need.
  for (const named of [apiErrorSchema, gatewayRefusalSchema]) schemaOf(named, schemas, 'output');
  return {
    openapi: '3.1.0',
    info: {
      title: 'Delayed job queue',
      version: API_VERSION,
      description: 'Jobs that run at a time, on AWS or locally with `npm start`. Generated from the schemas the API validates requests with and describes its answers by; a test holds every answer to them.',
    },
    paths,
    components: {
      schemas,
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'An API key: `Authorization: Bearer <key>`' },
        callbackToken: { type: 'apiKey', in: 'query', name: 'token', description: 'The token of a job’s callback_url, for its own callback and heartbeat only' },
      },
    },
  };
}
