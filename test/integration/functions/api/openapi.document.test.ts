/**
 * GET /openapi.json: the API as OpenAPI 3.1, generated from the operations table the router is built from and
 * the zod schemas the routes validate with. These tests keep the document, the router and the validators in step.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { expect, test } from 'vitest';
import { openApiDocument } from '../../../../functions/api/openapi.js';
import { OPERATIONS } from '../../../../functions/api/operations.js';
import { createRoutes } from '../../../../functions/api/routes/index.js';
import { registry } from '../../../../functions/worker/handlers/index.js';
import { freshApiPerTest } from '../../../support/api.js';

const fixture = freshApiPerTest();

/** A path of the template with every parameter filled with a value its pattern accepts. */
const concrete = (path: string): string =>
  path.replace('{type}', 'docs').replace('{name}', 'docs').replace('{correlation_key}', 'corr-1').replace('/v1/keys/{id}', '/v1/keys/0123456789abcdef').replace('{id}', 'doc-1');

test('GET /openapi.json answers without a key, the document the api generates', async () => {
  const response = await fixture().api.get('/openapi.json', { token: null });
  expect(response.status).toBe(200);
  expect(response.body).toEqual(openApiDocument());
});

test('the document is valid OpenAPI 3.1', async () => {
  const validator = new Validator();
  const result = await validator.validate(openApiDocument());
  expect(result.errors ?? []).toEqual([]);
  expect(result.valid).toBe(true);
  expect(validator.version).toBe('3.1');
});

test('every operation the routes serve is documented, and every documented one has a route', () => {
  const served = Object.keys(createRoutes({ ctx: fixture().queue.as('api'), registry })).sort();
  expect([...new Set(OPERATIONS.map((operation) => operation.route))].sort()).toEqual(served);
  const documented = Object.entries(openApiDocument().paths as Record<string, Record<string, unknown>>).flatMap(([path, methods]) =>
    Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
  );
  expect(documented.sort()).toEqual(OPERATIONS.map((operation) => `${operation.method} ${operation.path}`).sort());
});

test.each(OPERATIONS.map((operation) => [`${operation.method} ${operation.path}`, operation] as const))('%s reaches its route', async (_name, operation) => {
  const { api } = fixture();
  const response = await api.request(operation.method, concrete(operation.path), operation.method === 'GET' || operation.method === 'DELETE' ? {} : { body: {} });
  expect(response.body?.error?.message ?? '').not.toMatch(/^no route/);
});

test.each(OPERATIONS.filter((operation) => 'body' in operation).map((operation) => [`${operation.method} ${operation.path}`, operation] as const))(
  '%s refuses a field its documented body schema does not have, naming it',
  async (_name, operation) => {
    const { api } = fixture();
    expect((await api.put('/v1/job-types/docs', { target: { kind: 'handler', name: 'echo' } })).status).toBe(201);
    const schema = ((openApiDocument().paths as any)[operation.path][operation.method.toLowerCase()].requestBody.content['application/json'].schema) as { additionalProperties?: unknown };
    expect(schema.additionalProperties).toBe(false);
    const response = await api.request(operation.method, concrete(operation.path), { body: { not_a_field: 1 } });
    expect(response.status).toBe(400);
    expect(response.body.error.details).toContainEqual({ field: 'not_a_field', message: 'unknown field' });
  },
);
