/**
 * The JSON API's shapes as the dashboard reads them: the client's wire types
 * (lib/client/types.ts), with the fields of the overview that a server may not
 * have yet made optional, so an older server renders "–" instead of breaking
 * the page. No DOM here: the unit tests import these.
 */
import type * as Wire from '../lib/client/types.js';

export { JOB_STATUSES, type Attempt, type DeployedCost, type FieldIssue, type Job, type JobPage, type JobProgress, type RosterEntry } from '../lib/client/types.js';
export type { Schedule, SchedulePage } from '../lib/client/schedule-types.js';

export type { BulkOperation } from '../lib/client/bulk.js';

export type JobTypeStats = Pick<Wire.JobTypeStats, 'name'> & Partial<Omit<Wire.JobTypeStats, 'name'>>;

export interface Stats extends Omit<Wire.Stats, 'job_types'> {
  job_types: JobTypeStats[];
}

export type AlarmStatus = NonNullable<Wire.Stats['alarms']>[number];

export type FinishedCounts = Partial<Wire.MetricsMinute['finished']>;

export interface MetricsMinute extends Omit<Wire.MetricsMinute, 'finished'> {
  finished: FinishedCounts;
}

export const TERMINAL_STATUSES: ReadonlySet<string> = new Set(['succeeded', 'failed', 'expired', 'cancelled']);
