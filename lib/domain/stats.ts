/** What the API reports of a job type's jobs right now. */
export interface TypeStats {
  /** Queued jobs whose ready time has passed. */
  due: number;
  /** How long the oldest of them has been due; 0 when none is. */
  oldestDueLagMs: number;
  /** Queued jobs whose ready time is still ahead. */
  scheduled: number;
  running: number;
  awaitingCallback: number;
  /** Summed weight of the claims holding the type's concurrency slots; null when the type has no limit. */
  inFlightWeight: number | null;
}
