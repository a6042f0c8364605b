/** The routes of DESIGN §5 served so far: each parses, calls lib/, and maps the result. */
import { z } from 'zod';
import { apiKeyInputSchema, apiKeyToApi, createApiKey, KEY_ID_PATTERN, listApiKeys, revokeApiKey, scopeAllows } from '../../lib/api-keys.js';
import { completeFromCallback, heartbeatJob } from '../../lib/callbacks.js';
import type { QueueContext } from '../../lib/config.js';
import { ValidationError } from '../../lib/errors.js';
import { listJobTypes, putJobType, requireJobType } from '../../lib/job-types.js';
import { cancelJob, enqueueJob, newJobId, replayJob, requireJob } from '../../lib/jobs.js';
import {
  JOB_ID_PATTERN,
  JOB_TYPE_NAME_PATTERN,
  jobInputFromBody,
  jobInputSchema,
  jobToApi,
  jobTypeInputSchema,
  jobTypeToApi,
  parseWith,
} from '../../lib/model.js';
import { listRoster, rosterEntryToApi } from '../../lib/roster.js';
import { dueStatsOf, dueStatsOfType, dueStatsToApi } from '../../lib/stats.js';
import { isLinkLocalAddress, literalAddressOf } from '../../lib/targets/addresses.js';
import type { WorkerRegistry } from '../../lib/worker.js';
import type { Principal } from '../shared/principal.js';
import { assertCallbackAttempt } from './access.js';
import { json, parseJsonBody, pathParam, type HttpEvent, type HttpResponse } from './http.js';

export interface ApiDeps {
  ctx: QueueContext;
  /** The worker's code, so a job type can only name handlers and retry policies that exist. */
  registry: WorkerRegistry;
}

/** A route gets the caller the api authorised (undefined on public routes). */
export type Route = (event: HttpEvent, principal: Principal | undefined) => Promise<HttpResponse>;

const readableBy = (principal: Principal | undefined, type: string): boolean =>
  principal?.kind === 'key' && scopeAllows(principal.scopes, 'read', type);

function refusesLiteralAddress(url: string): boolean {
  const literal = literalAddressOf(new URL(url));
  return literal !== undefined && isLinkLocalAddress(literal);
}

const typeName = (event: HttpEvent, param = 'type'): string => pathParam(event, param, JOB_TYPE_NAME_PATTERN);
const jobId = (event: HttpEvent): string => pathParam(event, 'id', JOB_ID_PATTERN);

const callbackSchema = z.strictObject({
  status: z.enum(['succeeded', 'failed']),
  attempt: z.number().int().min(1).max(1000),
  retryable: z.boolean().optional(),
  error: z
    .strictObject({
      class: z.string().min(1).max(128).optional(),
      message: z.string().max(10_000).optional(),
      trace: z.string().max(100_000).optional(),
    })
    .optional(),
  result: z.json().optional(),
});

const heartbeatSchema = z.strictObject({
  attempt: z.number().int().min(1).max(1000),
  extend_s: z.number().int().min(1).max(43_200).optional(),
});

export function createRoutes({ ctx, registry }: ApiDeps) {
  const putJobTypeRoute: Route = async (event) => {
    const name = typeName(event, 'name');
    const input = parseWith(jobTypeInputSchema, parseJsonBody(event));
    if (input.target.kind === 'handler' && !(input.target.name in registry.handlers)) {
      throw new ValidationError([{ field: 'target.name', message: `no handler named "${input.target.name}" in the worker` }]);
    }
    if (input.target.kind === 'http' && !input.target.allow_link_local && refusesLiteralAddress(input.target.url)) {
      throw new ValidationError([{ field: 'target.url', message: 'is a link-local or metadata address; set allow_link_local to allow it' }]);
    }
    if (input.retry?.kind === 'custom' && !(input.retry.name in registry.retryPolicies)) {
      throw new ValidationError([{ field: 'retry.name', message: `no retry policy named "${input.retry.name}" in the worker` }]);
    }
    const { jobType, created, newSigningSecret } = await putJobType(ctx, name, input);
    // The only time the secret leaves the store: the caller keeps it for the downstream to verify requests.
    const body = newSigningSecret !== undefined ? { ...jobTypeToApi(jobType), signing_secret: newSigningSecret } : jobTypeToApi(jobType);
    return json(created ? 201 : 200, body);
  };

  const enqueue = async (event: HttpEvent, id: string): Promise<HttpResponse> => {
    const jobType = await requireJobType(ctx, typeName(event));
    const input = jobInputFromBody(parseWith(jobInputSchema, parseJsonBody(event)));
    const { job, created } = await enqueueJob(ctx, jobType, id, input);
    return json(created ? 201 : 200, jobToApi(job));
  };

  return {
    health: async () => json(200, { status: 'ok' }),
    putJobType: putJobTypeRoute,
    listJobTypes: async (_event, principal) => {
      const readable = (await listJobTypes(ctx)).filter((jobType) => readableBy(principal, jobType.name));
      return json(200, { job_types: readable.map(jobTypeToApi) });
    },
    getJobType: async (event) => {
      const jobType = await requireJobType(ctx, typeName(event, 'name'));
      return json(200, { ...jobTypeToApi(jobType), stats: dueStatsToApi(await dueStatsOfType(ctx, jobType)) });
    },
    stats: async (_event, principal) => {
      const readable = (await listJobTypes(ctx)).filter((jobType) => readableBy(principal, jobType.name));
      const [stats, roster] = await Promise.all([dueStatsOf(ctx, readable), listRoster(ctx)]);
      return json(200, {
        job_types: stats.map(({ jobType, stats: typeStats }) => ({ name: jobType.name, ...dueStatsToApi(typeStats) })),
        pollers: roster.poller.map(rosterEntryToApi),
        workers: roster.worker.map(rosterEntryToApi),
      });
    },
    enqueueWithId: async (event) => enqueue(event, jobId(event)),
    enqueueWithServerId: async (event) => enqueue(event, newJobId(ctx.nowMs())),
    getJob: async (event) => json(200, jobToApi(await requireJob(ctx, typeName(event), jobId(event)))),
    callback: async (event, principal) => {
      const id = jobId(event);
      const body = parseWith(callbackSchema, parseJsonBody(event));
      assertCallbackAttempt(principal, body.attempt);
      const jobType = await requireJobType(ctx, typeName(event));
      const job = await completeFromCallback(
        ctx,
        jobType,
        id,
        {
          status: body.status,
          attempt: body.attempt,
          ...(body.retryable !== undefined ? { retryable: body.retryable } : {}),
          ...(body.error ? { error: body.error } : {}),
          ...(body.result !== undefined ? { result: body.result } : {}),
        },
        registry.retryPolicies,
      );
      return json(200, jobToApi(job));
    },
    heartbeat: async (event, principal) => {
      const body = parseWith(heartbeatSchema, parseJsonBody(event));
      assertCallbackAttempt(principal, body.attempt);
      const jobType = await requireJobType(ctx, typeName(event));
      const job = await heartbeatJob(ctx, jobType, jobId(event), body.attempt, body.extend_s);
      return json(200, jobToApi(job));
    },
    replay: async (event) => {
      const jobType = await requireJobType(ctx, typeName(event));
      return json(201, jobToApi(await replayJob(ctx, jobType, jobId(event))));
    },
    cancel: async (event) => json(200, jobToApi(await cancelJob(ctx, typeName(event), jobId(event)))),
    createKey: async (event) => {
      const { key, presented } = await createApiKey(ctx, parseWith(apiKeyInputSchema, parseJsonBody(event)));
      return json(201, { ...apiKeyToApi(key), key: presented });
    },
    listKeys: async () => json(200, { keys: (await listApiKeys(ctx)).map(apiKeyToApi) }),
    revokeKey: async (event) => json(200, apiKeyToApi(await revokeApiKey(ctx, pathParam(event, 'id', KEY_ID_PATTERN)))),
  } satisfies Record<string, Route>;
}
