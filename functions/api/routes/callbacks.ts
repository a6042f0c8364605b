/** Status callbacks and heartbeats: a downstream reports on the attempt it was handed. */
import { completeCorrelatedJob, completeFromCallback, findActiveCorrelatedJob, heartbeatJob } from '../../../lib/queue/attempt/callbacks.js';
import { NotFoundError } from '../../../lib/domain/errors.js';
import { CORRELATION_KEY_PATTERN, type Job } from '../../../lib/domain/job.js';
import { parseWith } from '../../../lib/wire/parse.js';
import { createMetricsRecorder } from '../../../lib/queue/telemetry/metrics-history.js';
import { finishedOutcomeOfStatus } from '../../../lib/domain/metrics.js';
import { callbackInputOf, callbackSchema, correlationCallbackSchema, heartbeatSchema } from '../../../lib/wire/api-requests.js';
import { json, type HttpResponse } from '../../shared/http.js';
import { log } from '../../shared/log.js';
import type { Principal } from '../../shared/principal.js';
import { assertCallbackAttempt, jobAnswer, keyAllows } from '../access.js';
import { parseJsonBody, pathParam } from '../http.js';
import { jobId, typeName, type Route, type RouteDeps } from './route.js';

export function callbackRoutes({ ctx, registry, jobTypes }: RouteDeps) {
  // Attempts ended by a status callback never pass through a worker: the api counts them in the history. Its
  // write is awaited in the request that makes it (one request per container every 10 s at most), as Lambda
  // may freeze the container as soon as the answer is out; counts held back go out with a trailing write.
  // A write that fails is logged and fails nothing.
  const history = createMetricsRecorder(ctx, (error) => log('warn', 'could not write the metrics history', { error }));
  const counted = async (job: Job, principal: Principal | undefined): Promise<HttpResponse> => {
    const finished = finishedOutcomeOfStatus(job.status);
    if (finished) history.recordFinished(job.type, finished, ctx.nowMs());
    history.flushSoon();
    await history.settled();
    return json(200, jobAnswer(job, principal));
  };

  return {
    callback: async (event, principal) => {
      const id = jobId(event);
      const body = parseWith(callbackSchema, parseJsonBody(event));
      assertCallbackAttempt(principal, body.attempt);
      const jobType = await jobTypes.require(typeName(event));
      return counted(await completeFromCallback(ctx, jobType, id, callbackInputOf(body), registry.retryPolicies), principal);
    },
    callbackByCorrelationKey: async (event, principal) => {
      const correlationKey = pathParam(event, 'correlation_key', CORRELATION_KEY_PATTERN);
      const body = parseWith(correlationCallbackSchema, parseJsonBody(event));
      // Only the types the key may call back are looked in: another type's holder of the key is no holder to
      // it, and answers the very 404 of a key no job holds.
      const found = await findActiveCorrelatedJob(ctx, correlationKey, (type) => keyAllows(principal, 'callback', type));
      if (found === undefined) throw new NotFoundError(`no job that has not finished holds correlation_key "${correlationKey}"`);
      const jobType = await jobTypes.require(found.job.type);
      return counted(await completeCorrelatedJob(ctx, jobType, found, callbackInputOf(body), registry.retryPolicies), principal);
    },
    heartbeat: async (event, principal) => {
      const body = parseWith(heartbeatSchema, parseJsonBody(event));
      assertCallbackAttempt(principal, body.attempt);
      const jobType = await jobTypes.require(typeName(event));
      const job = await heartbeatJob(ctx, jobType, jobId(event), { attempt: body.attempt, extendS: body.extend_s, progress: body.progress });
      return json(200, jobAnswer(job, principal));
    },
  } satisfies Record<string, Route>;
}
