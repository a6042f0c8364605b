/**
 * The JSON API's shapes as the dashboard reads them. Fields that a server may
 * not have yet are optional, so an older server renders "–" instead of
 * breaking the page. No DOM here: the unit tests import these.
 */

export interface JobTypeStats {
  name: string;
  due?: number;
  scheduled?: number;
  running?: number;
  awaiting_callback?: number;
  oldest_due_lag_ms?: number;
  /** null: the type has no concurrency limit, so no counter. */
  in_flight_weight?: number | null;
  /** null: no limit. */
  concurrency?: number | null;
  paused?: boolean;
}

export interface RosterEntry {
  id: string;
  host: string;
  shards?: number[];
  started_at: string;
  last_seen_at: string;
}

export interface Stats {
  job_types: JobTypeStats[];
  pollers: RosterEntry[];
  workers: RosterEntry[];
}

export interface FinishedCounts {
  succeeded?: number;
  failed?: number;
  expired?: number;
  retried?: number;
}

export interface MetricsMinute {
  /** The minute's start, ISO 8601. */
  at: string;
  finished: FinishedCounts;
  lag_p50_ms: number | null;
  lag_p99_ms: number | null;
}

export interface AttemptError {
  class?: string;
  message?: string;
  trace?: string;
}

export interface Attempt {
  attempt: number;
  claimed_at: string | null;
  started_at: string | null;
  ended_at: string | null;
  outcome: string | null;
  error: AttemptError | null;
  worker: { id?: string; host?: string } | null;
}

export interface Job {
  id: string;
  type: string;
  status: string;
  data: unknown;
  attempt: number;
  max_attempts: number;
  delivery_strategy: string;
  run_after: string | null;
  expires_at: string | null;
  priority: number;
  weight: number;
  throttle_key: string | null;
  correlation_key: string | null;
  created_at: string | null;
  updated_at: string | null;
  finished_at: string | null;
  result: unknown;
  claimed_until: string | null;
  history: Attempt[];
  history_dropped: number;
}

export interface JobPage {
  jobs: Job[];
  next_cursor: string | null;
}

export const JOB_STATUSES = ['queued', 'running', 'awaiting_callback', 'succeeded', 'failed', 'expired', 'cancelled'] as const;
export const TERMINAL_STATUSES: ReadonlySet<string> = new Set(['succeeded', 'failed', 'expired', 'cancelled']);

export interface FieldIssue {
  field: string;
  message: string;
}
