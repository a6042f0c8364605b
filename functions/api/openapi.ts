/**
 * The API as an OpenAPI 3.1 document, generated from the operations table and the zod schemas its routes
 * validate with (zod's own JSON Schema output, draft 2020-12, which OpenAPI 3.1 uses as is).
 */
import { z } from 'zod';
import { KEY_ID_PATTERN } from '../../lib/domain/api-key.js';
import { CORRELATION_KEY_PATTERN, JOB_ID_PATTERN } from '../../lib/domain/job.js';
import { JOB_TYPE_NAME_PATTERN } from '../../lib/domain/job-type.js';
import { SCHEDULE_NAME_PATTERN } from '../../lib/domain/schedule.js';
import { apiErrorSchema } from '../../lib/wire/api-errors.js';
import type { Access } from './access.js';
import { OPERATIONS, type Operation } from './operations.js';

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
 * there: a `#/$defs/...` reference inside the document would resolve against the document's root.
 */
function schemaOf(schema: z.ZodType, components: Record<string, JsonSchema>): JsonSchema {
  const { $schema: _draft, $defs, ...json } = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const toComponents = (value: JsonSchema): JsonSchema =>
    JSON.parse(JSON.stringify(value).replaceAll('"#/$defs/', '"#/components/schemas/')) as JsonSchema;
  for (const [name, definition] of Object.entries(($defs ?? {}) as Record<string, JsonSchema>)) {
    if (name.startsWith('__')) throw new Error(`a schema the api documents shares an unnamed part (${name}): give it a .meta({ id })`);
    components[name] = toComponents(definition);
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
  const json = schemaOf(query, components) as { properties?: Record<string, JsonSchema>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, schema]) => ({ name, in: 'query', required: json.required?.includes(name) ?? false, schema }));
}

const SUCCESS: Record<number, string> = { 200: 'Success', 201: 'Created' };

const ERROR_STATUSES: Record<number, string> = {
  400: 'The request is invalid: `details` name each field',
  401: 'No valid key',
  403: 'The key’s scopes do not cover this',
  404: 'Not found',
  409: 'In conflict with the current state',
  413: 'Too large',
  415: 'Not JSON',
  500: 'Internal error',
};

function security(access: Access): JsonSchema[] {
  if (access.kind === 'public') return [];
  // A status callback also takes the callback token its callback_url carries, in place of a key.
  return access.kind === 'callback' ? [{ apiKey: [] }, { callbackToken: [] }] : [{ apiKey: [] }];
}

function operationObject(operation: Operation, components: Record<string, JsonSchema>): JsonSchema {
  const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });
  const errors = Object.entries(ERROR_STATUSES).filter(([status]) => operation.access.kind !== 'public' || status === '500');
  return {
    operationId: operation.route,
    summary: operation.summary,
    security: security(operation.access),
    parameters: [...pathParameters(operation.path), ...queryParameters(operation.query, components)],
    ...(operation.body ? { requestBody: { required: true, content: { 'application/json': { schema: schemaOf(operation.body, components) } } } } : {}),
    responses: {
      ...Object.fromEntries(operation.statuses.map((status) => [String(status), { description: SUCCESS[status] ?? 'Success', content: { 'application/json': { schema: {} } } }])),
      ...Object.fromEntries(errors.map(([status, description]) => [status, errorResponse(description)])),
    },
  };
}

export function openApiDocument(operations: readonly Operation[] = OPERATIONS): JsonSchema {
  const schemas: Record<string, JsonSchema> = {};
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const operation of operations) {
    paths[operation.path] = { ...paths[operation.path], [operation.method.toLowerCase()]: operationObject(operation, schemas) };
  }
  schemas.Error = schemaOf(apiErrorSchema, schemas);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Delayed job queue',
      version: API_VERSION,
      description: 'Jobs that run at a time, on AWS or locally with `npm start`. Generated from the schemas the API validates requests with.',
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
