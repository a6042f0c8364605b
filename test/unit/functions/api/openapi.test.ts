/** How the OpenAPI document names the schemas it shares (functions/api/openapi.ts). */
import { expect, test } from 'vitest';
import { z } from 'zod';
import { ADMIN } from '../../../../functions/api/access.js';
import { openApiDocument } from '../../../../functions/api/openapi.js';
import type { Operation } from '../../../../functions/api/operations.js';

const operation = (schema: z.ZodType): Operation => ({
  method: 'PUT',
  path: '/v1/things/{name}',
  access: ADMIN,
  route: 'putThing',
  summary: 'A thing',
  body: schema,
  responses: { 200: schema },
});

test('a named schema a request and an answer share is one component', () => {
  const thing = z.strictObject({ size: z.number() }).meta({ id: 'Thing' });
  const { components } = openApiDocument([operation(thing)]) as { components: { schemas: Record<string, unknown> } };
  expect(components.schemas.Thing).toEqual({ type: 'object', properties: { size: { type: 'number' } }, required: ['size'], additionalProperties: false });
});

test('a named schema that reads differently accepted and written is refused, not described one way for both', () => {
  const thing = z.strictObject({ size: z.number().default(1) }).meta({ id: 'Thing' });
  expect(() => openApiDocument([operation(thing)])).toThrow('the schema named Thing is described two ways');
});

test('every enqueue documents the traceparent header it reads, and no other operation does', () => {
  const { paths } = openApiDocument() as { paths: Record<string, Record<string, { operationId: string; parameters: { name: string; in: string }[] }>> };
  const traced = Object.values(paths)
    .flatMap((methods) => Object.values(methods))
    .filter((described) => described.parameters.some((parameter) => parameter.in === 'header' && parameter.name === 'traceparent'))
    .map((described) => described.operationId);
  expect(traced.sort()).toEqual(['enqueueBatch', 'enqueueWithId', 'enqueueWithServerId', 'jobberQueue']);
});
