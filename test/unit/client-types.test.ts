/**
 * The client writes the wire types out instead of importing the server's zod
 * schemas; these checks (run by `tsc`, which type-checks the tests) fail the
 * build when the two drift apart.
 */
import { expectTypeOf, test } from 'vitest';
import type { z } from 'zod';
import type { EnqueueJob, JobTypeBody } from '../../lib/client/types.js';
import type { jobInputSchema } from '../../lib/wire/jobs.js';
import type { jobTypeInputSchema } from '../../lib/wire/job-types.js';

type ServerJobTypeBody = z.input<typeof jobTypeInputSchema>;
type ServerJobBody = z.input<typeof jobInputSchema>;

test('a job type body the client builds is one the server accepts, and the other way round', () => {
  expectTypeOf<JobTypeBody>().toExtend<ServerJobTypeBody>();
  expectTypeOf<ServerJobTypeBody>().toExtend<JobTypeBody>();
  expectTypeOf<keyof JobTypeBody>().toEqualTypeOf<keyof ServerJobTypeBody>();
});

test('a job the client builds, its times as strings, is one the server accepts, and the other way round', () => {
  type ClientJobOnTheWire = Omit<EnqueueJob, 'run_after' | 'expires_at'> & { run_after?: string; expires_at?: string | null };
  expectTypeOf<ClientJobOnTheWire>().toExtend<ServerJobBody>();
  expectTypeOf<ServerJobBody>().toExtend<EnqueueJob>();
  expectTypeOf<keyof EnqueueJob>().toEqualTypeOf<keyof ServerJobBody>();
});
