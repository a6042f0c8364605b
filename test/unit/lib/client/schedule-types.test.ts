/** The client's schedule body against the server's schema, checked by `tsc` as types.test.ts does for jobs. */
import { expectTypeOf, test } from 'vitest';
import type { z } from 'zod';
import type { ScheduleBody } from '../../../../lib/client/schedule-types.js';
import type { scheduleInputSchema } from '../../../../lib/wire/schedules.js';

type ServerScheduleBody = z.input<typeof scheduleInputSchema>;

test('a schedule body the client builds, its times as strings, is one the server accepts, and the other way round', () => {
  type ClientScheduleOnTheWire = Omit<ScheduleBody, 'start_at' | 'end_at'> & { start_at?: string | null; end_at?: string | null };
  expectTypeOf<ClientScheduleOnTheWire>().toExtend<ServerScheduleBody>();
  expectTypeOf<ServerScheduleBody>().toExtend<ScheduleBody>();
  expectTypeOf<keyof ScheduleBody>().toEqualTypeOf<keyof ServerScheduleBody>();
});
