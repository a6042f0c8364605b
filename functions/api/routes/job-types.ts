/** `/v1/job-types`: define, read, pause and resume job types. */
import { ValidationError } from '../../../lib/domain/errors.js';
import type { JobType } from '../../../lib/domain/job-type.js';
import { jobTypeDefinitionOf, jobTypeInputSchema, jobTypeToApi, type JobTypeAudience, type JobTypeInput } from '../../../lib/wire/job-types.js';
import type { Principal } from '../../shared/principal.js';
import { parseWith } from '../../../lib/wire/parse.js';
import { putJobType, requireJobType, setJobTypePaused } from '../../../lib/queue/catalog/job-types.js';
import { statsOfType } from '../../../lib/queue/read/type-stats.js';
import { typeStatsToApi } from '../../../lib/wire/stats.js';
import { LOCAL_TARGET_ADDRESSES, urlAddressRefusal, type TargetAddressPolicy } from '../../../lib/targets/addresses.js';
import { urlCredentialIssue } from '../../../lib/domain/url-credentials.js';
import { json } from '../../shared/http.js';
import { parseJsonBody } from '../http.js';
import { readableJobTypes, typeName, type ApiDeps, type Route, type RouteDeps } from './route.js';

/**
 * A job type may name only the worker's handlers and retry policies, and an http target no credentials and
 * no address the worker would refuse (as far as the URL tells before a lookup).
 */
function assertRunnable(input: JobTypeInput, registry: ApiDeps['registry'], addressPolicy: TargetAddressPolicy): void {
  if (input.target.kind === 'handler' && !Object.hasOwn(registry.handlers, input.target.name)) {
    throw new ValidationError([{ field: 'target.name', message: `no handler named "${input.target.name}" in the worker` }]);
  }
  if (input.target.kind === 'http') {
    const url = new URL(input.target.url);
    const issue = urlCredentialIssue(url) ?? urlAddressRefusal(url, addressPolicy, input.target.allow_link_local);
    if (issue !== undefined) throw new ValidationError([{ field: 'target.url', message: issue }]);
  }
  if (input.retry?.kind === 'custom' && !Object.hasOwn(registry.retryPolicies, input.retry.name)) {
    throw new ValidationError([{ field: 'retry.name', message: `no retry policy named "${input.retry.name}" in the worker` }]);
  }
}

/** Admin keys define job types, so they see a target's URL as they gave it; every other key as a reader. */
const audienceOf = (principal: Principal | undefined): JobTypeAudience => (principal?.kind === 'key' && principal.scopes.includes('admin') ? 'admin' : 'reader');

export function jobTypeRoutes({ ctx, registry, jobTypes, targetAddressPolicy = LOCAL_TARGET_ADDRESSES }: RouteDeps) {
  const kept = (jobType: JobType): JobType => {
    jobTypes.keep(jobType);
    return jobType;
  };
  return {
    putJobType: async (event) => {
      const name = typeName(event, 'name');
      const input = parseWith(jobTypeInputSchema, parseJsonBody(event));
      assertRunnable(input, registry, targetAddressPolicy);
      const { jobType, created, newSigningSecret } = await putJobType(ctx, name, jobTypeDefinitionOf(input));
      kept(jobType);
      // The only time the secret leaves the store: the caller keeps it for the downstream to verify requests.
      const body = newSigningSecret !== undefined ? { ...jobTypeToApi(jobType, 'admin'), signing_secret: newSigningSecret } : jobTypeToApi(jobType, 'admin');
      return json(created ? 201 : 200, body);
    },
    listJobTypes: async (_event, principal) =>
      json(200, { job_types: (await readableJobTypes(ctx, principal)).map((jobType) => jobTypeToApi(jobType, audienceOf(principal))) }),
    getJobType: async (event, principal) => {
      const jobType = kept(await requireJobType(ctx, typeName(event, 'name')));
      return json(200, { ...jobTypeToApi(jobType, audienceOf(principal)), stats: typeStatsToApi(await statsOfType(ctx, jobType)) });
    },
    pauseJobType: async (event) => json(200, jobTypeToApi(kept(await setJobTypePaused(ctx, typeName(event, 'name'), true)), 'admin')),
    resumeJobType: async (event) => json(200, jobTypeToApi(kept(await setJobTypePaused(ctx, typeName(event, 'name'), false)), 'admin')),
  } satisfies Record<string, Route>;
}
