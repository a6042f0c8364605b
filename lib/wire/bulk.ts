/** Bulk operations on the wire: the body that starts one and the operation as `GET /v1/operations/{id}` shows it. */
import { z } from 'zod';
import { BULK_ACTIONS, BULK_STATUSES, OPERATION_STATES, RUNNING_STATUSES, type BulkOperation, type BulkRequest } from '../domain/bulk.js';
import { JOB_STATUSES, type JobStatus } from '../domain/job.js';
import { instantSchema, tagSchema, throttleKeySchema } from './fields.js';
import { isoWithOffset } from './jobs.js';
import { isoOrNull } from './parse.js';

/** `POST /v1/jobs/{type}/bulk`. */
export const bulkRequestSchema = z
  .strictObject({
    action: z.enum(BULK_ACTIONS),
    status: z.enum(JOB_STATUSES),
    from: isoWithOffset.optional(),
    to: isoWithOffset.optional(),
    throttle_key: throttleKeySchema.optional(),
    tag: tagSchema.optional().meta({ description: 'Only jobs with this tag, enqueued before the operation started' }),
    include_running: z.boolean().optional(),
  })
  .superRefine((body, ctx) => {
    if (body.include_running !== undefined && body.action !== 'cancel') {
      ctx.addIssue({ code: 'custom', path: ['include_running'], message: 'is for action cancel only' });
    }
    const statuses: readonly JobStatus[] =
      body.action === 'cancel' && body.include_running !== true ? BULK_STATUSES.cancel.filter((status) => !RUNNING_STATUSES.includes(status)) : BULK_STATUSES[body.action];
    if (!statuses.includes(body.status)) {
      const unless = body.action === 'cancel' && body.include_running !== true ? ' (running or awaiting_callback with include_running: true)' : '';
      ctx.addIssue({ code: 'custom', path: ['status'], message: `must be ${statuses.join(' or ')} for action ${body.action}${unless}` });
    }
    if (body.from && body.to && Date.parse(body.from) > Date.parse(body.to)) {
      ctx.addIssue({ code: 'custom', path: ['from'], message: 'must not be after to' });
    }
  });

export function bulkRequestFromBody(body: z.output<typeof bulkRequestSchema>): BulkRequest {
  return {
    action: body.action,
    status: body.status,
    ...(body.from !== undefined ? { fromMs: Date.parse(body.from) } : {}),
    ...(body.to !== undefined ? { toMs: Date.parse(body.to) } : {}),
    ...(body.throttle_key !== undefined ? { throttleKey: body.throttle_key } : {}),
    ...(body.tag !== undefined ? { tag: body.tag } : {}),
    ...(body.include_running === true ? { includeRunning: true as const } : {}),
  };
}

export function operationToApi(operation: BulkOperation) {
  return {
    id: operation.id,
    type: operation.type,
    action: operation.action,
    status: operation.status,
    from: isoOrNull(operation.fromMs),
    to: isoOrNull(operation.toMs),
    throttle_key: operation.throttleKey ?? null,
    tag: operation.tag ?? null,
    include_running: operation.includeRunning === true,
    state: operation.state,
    matched: operation.matched,
    done: operation.done,
    skipped: operation.skipped,
    failed: operation.failed,
    pages: operation.pages,
    by: operation.by,
    created_at: new Date(operation.createdAtMs).toISOString(),
    updated_at: new Date(operation.updatedAtMs).toISOString(),
    finished_at: isoOrNull(operation.finishedAtMs),
  };
}

/** A bulk operation as operationToApi writes it. */
export const bulkOperationSchema = z
  .strictObject({
    id: z.string(),
    type: z.string(),
    action: z.enum(BULK_ACTIONS),
    status: z.enum([...BULK_STATUSES.retry, ...BULK_STATUSES.cancel]),
    from: instantSchema.nullable(),
    to: instantSchema.nullable().meta({ description: 'A retry started without to stops at the jobs finished when it started' }),
    throttle_key: z.string().nullable(),
    tag: z.string().nullable().meta({ description: 'Only jobs with this tag, enqueued before the operation started' }),
    include_running: z.boolean().meta({ description: 'A cancel that cancels started jobs too: running ones are asked to stop, ones awaiting their callback end' }),
    state: z.enum(OPERATION_STATES),
    matched: z.number().int().meta({ description: 'Jobs found in the selection so far' }),
    done: z.number().int().meta({ description: 'Jobs retried or cancelled' }),
    skipped: z.number().int().meta({ description: 'Jobs that had left the status by the time their page was run' }),
    failed: z.number().int().meta({ description: 'Jobs whose write kept failing' }),
    pages: z.number().int(),
    by: z.string().meta({ description: 'The id of the API key that started it' }),
    created_at: instantSchema,
    updated_at: instantSchema,
    finished_at: instantSchema.nullable(),
  })
  .meta({ id: 'BulkOperation' });
