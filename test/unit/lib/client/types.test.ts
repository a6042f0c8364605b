/**
 * The client writes the wire types out instead of importing the server's zod
 * schemas; these checks (run by `tsc`, which type-checks the tests) fail the
 * build when the two drift apart.
 */
import { expectTypeOf, test } from 'vitest';
import type { z } from 'zod';
import type { EnqueueJob, HeartbeatBody, JobChangeBody, JobTypeBody } from '../../../../lib/client/types.js';
import type { heartbeatSchema } from '../../../../lib/wire/api-requests.js';
import type { jobInputSchema, jobPatchSchema } from '../../../../lib/wire/jobs.js';
import type { jobTypeInputSchema } from '../../../../lib/wire/job-types.js';

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

test('a change the client builds, its times as strings, is one the server accepts, and the other way round', () => {
  type ServerChangeBody = z.input<typeof jobPatchSchema>;
  type ClientChangeOnTheWire = Omit<JobChangeBody, 'run_after' | 'expires_at'> & { run_after?: string; expires_at?: string | null };
  expectTypeOf<ClientChangeOnTheWire>().toExtend<ServerChangeBody>();
  expectTypeOf<ServerChangeBody>().toExtend<JobChangeBody>();
  expectTypeOf<keyof JobChangeBody>().toEqualTypeOf<keyof ServerChangeBody>();
});

test('a heartbeat the client builds, progress included, is one the server accepts, and the other way round', () => {
  type ServerHeartbeatBody = z.input<typeof heartbeatSchema>;
  expectTypeOf<HeartbeatBody>().toExtend<ServerHeartbeatBody>();
  expectTypeOf<ServerHeartbeatBody>().toExtend<HeartbeatBody>();
  expectTypeOf<keyof HeartbeatBody>().toEqualTypeOf<keyof ServerHeartbeatBody>();
});
