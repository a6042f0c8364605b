/** The bodies of `GET /v1/stats` and `GET /v1/metrics` as they are on the wire (snake_case); lib/client/types.ts exports them with the rest. */

export interface TypeStats {
  due: number;
  scheduled: number;
  running: number;
  awaiting_callback: number;
  oldest_due_lag_ms: number;
  /** The weight the type's concurrency counter holds; null without a concurrency limit. */
  in_flight_weight: number | null;
}

/** A type's row of `stats()`. */
export interface JobTypeStats extends TypeStats {
  name: string;
  concurrency: number | null;
  paused: boolean;
}

/** A live poller or worker process; a poller's carries the shards it polls. */
export interface RosterEntry {
  id: string;
  host: string;
  shards?: number[];
  started_at: string;
  last_seen_at: string;
}

export interface PollerEntry extends RosterEntry {
  shards: number[];
}

export type WorkerEntry = Omit<RosterEntry, 'shards'>;

export interface Stats {
  job_types: JobTypeStats[];
  pollers: PollerEntry[];
  workers: WorkerEntry[];
  /** The stack's alarms (`DueLagAlarm`, ...), where the server evaluates them (`npm start`): why and when each went into its state. */
  alarms?: { name: string; state: 'OK' | 'ALARM' | 'INSUFFICIENT_DATA'; reason: string; changed_at: string }[] | undefined;
  /** What the traffic the server has seen would have cost deployed, where it meters itself (`npm start`), at the list prices of `prices_as_of`. */
  deployed_cost?: DeployedCost | undefined;
}

export interface DeployedCost {
  since: string;
  prices_as_of: string;
  region: string;
  /** Billed units counted since, all functions together: `lambda_requests`, `dynamo_db_write_units`, ... */
  units: Record<string, number>;
  /** By service: `lambda`, `dynamodb`, `api_gateway`, ... */
  traffic_dollars: Record<string, number>;
  /** By function, and `gateway` for API Gateway itself. */
  traffic_dollars_by_function: Record<string, number>;
  /** The secret, the alarms and the timer queue's polling, by service. */
  fixed_dollars_per_month: Record<string, number>;
  total_dollars: number;
}

export interface MetricsMinute {
  /** The minute's start, ISO 8601. */
  at: string;
  finished: { succeeded: number; failed: number; expired: number; retried: number };
  /** null in a minute without claims. */
  lag_p50_ms: number | null;
  lag_p99_ms: number | null;
}

export interface Metrics {
  /** Oldest first; the last is the current, running minute. */
  minutes: MetricsMinute[];
  job_types: { name: string; minutes: MetricsMinute[] }[];
}
