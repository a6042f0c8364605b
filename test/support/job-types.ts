/** A job type from an API body, as tests build the types their jobs run under without storing them. */
import { jobTypeOf, type JobType } from '../../lib/domain/job-type.js';
import { jobTypeDefinitionOf, type JobTypeInput } from '../../lib/wire/job-types.js';

export function jobTypeFromInput(name: string, input: JobTypeInput, times: { createdAtMs: number; updatedAtMs: number }, pausedBefore = false): JobType {
  return jobTypeOf(name, jobTypeDefinitionOf(input), times, pausedBefore);
}
