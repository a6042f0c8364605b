/** Recurring schedules as the typed client sends and reads them. */
import type { JobStatus, Json } from './types.js';

/** A recurring schedule's body: `PUT /v1/schedules/{name}`. */
export interface ScheduleBody {
  /** Five fields (minute first) or six (second first), e.g. `0 5 * * 1-5`. */
  cron: string;
  /** An IANA zone. @default "UTC" */
  tz?: string | undefined;
  job_type: string;
  data?: Json | undefined;
  priority?: number | undefined;
  weight?: number | undefined;
  throttle_key?: string | null | undefined;
  /** The tags each job it makes carries (the rules of a job's tags). */
  tags?: string[] | null | undefined;
  /** `skip`: a fire while the previous fire's job is unfinished makes no job. @default "allow" */
  overlap?: 'allow' | 'skip' | undefined;
  /** After missed fire times: one job for the latest, each (at most 100, the latest), or none. @default "latest" */
  catch_up?: 'latest' | 'all' | 'none' | undefined;
  start_at?: Date | string | null | undefined;
  end_at?: Date | string | null | undefined;
}

export interface Schedule {
  name: string;
  cron: string;
  tz: string;
  job_type: string;
  data: Json;
  priority: number;
  weight: number;
  throttle_key: string | null;
  tags: string[];
  overlap: 'allow' | 'skip';
  catch_up: 'latest' | 'all' | 'none';
  start_at: string | null;
  end_at: string | null;
  paused: boolean;
  /** null once end_at has passed every fire time. */
  next_fire_at: string | null;
  /** The next few fire times (single schedules, not listings). */
  next_fires?: string[];
  /**
   * The last fire time: the job it made (`job_id`), or why it made none (`skipped`); `getSchedule` and
   * `listSchedules` add that job's status now (null when it made none or the job is gone).
   */
  last_fire: { fire_at: string; fired_at: string; job_id: string | null; skipped: string | null; job_status?: JobStatus | null } | null;
  created_at: string;
  updated_at: string;
}

export interface SchedulePage {
  schedules: Schedule[];
  next_cursor: string | null;
}
