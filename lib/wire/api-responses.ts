/** The api's answers that are not a model's own shape (jobs, job types, keys, schedules and stats have theirs beside their model). */
import { z } from 'zod';
import { apiErrorSchema } from './api-errors.js';
import { jobSchema } from './jobs.js';

export const healthSchema = z.strictObject({ status: z.literal('ok') });

/** `GET /openapi.json`: the document as openApiDocument writes it; its parts are OpenAPI's own, not restated here. */
export const openApiDocumentSchema = z.strictObject({
  openapi: z.literal('3.1.0'),
  info: z.strictObject({ title: z.string(), version: z.string(), description: z.string() }),
  paths: z.record(z.string(), z.record(z.string(), z.unknown())),
  components: z.strictObject({ schemas: z.record(z.string(), z.unknown()), securitySchemes: z.record(z.string(), z.unknown()) }),
});

/** `POST /v1/jobs/{type}/batch`: a result per item, in the body's order; an item's refusal is its own error body. */
export const batchResultSchema = z.strictObject({
  results: z.array(
    z.union([
      z.strictObject({ index: z.number().int(), id: z.string(), status: z.literal([200, 201]), job: jobSchema }),
      apiErrorSchema.extend({ index: z.number().int(), id: z.string().nullable(), status: z.number().int() }),
    ]),
  ),
});

/** `POST /jobber/queue`: the new job's id, in Jobber's own field name. */
export const jobberQueueResultSchema = z.strictObject({ 'job-id': z.string() });
