/** How values read on the page. Pure, so the unit tests cover it without a browser. */

/** What a cell shows for a field the server does not send (yet). */
export const ABSENT = '–';

export function count(value: number | undefined): string {
  return value === undefined ? ABSENT : String(value);
}

export function duration(ms: number | null | undefined): string {
  if (ms === undefined || ms === null) return ABSENT;
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  if (ms < 3_600_000) return `${(ms / 60_000).toFixed(1)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

/** `in_flight_weight / concurrency`, ∞ for a type without a limit. */
export function concurrencyInUse(inFlightWeight: number | null | undefined, concurrency: number | null | undefined): string {
  // A type without a limit keeps no counter: there is nothing in use to show against ∞.
  if (concurrency === null && inFlightWeight === null) return '∞';
  if (inFlightWeight === undefined || inFlightWeight === null) return ABSENT;
  if (concurrency === undefined) return `${inFlightWeight} / ${ABSENT}`;
  return `${inFlightWeight} / ${concurrency === null ? '∞' : concurrency}`;
}

export function pausedState(paused: boolean | undefined): string {
  if (paused === undefined) return ABSENT;
  return paused ? 'paused' : 'running';
}

/** A timestamp in the reader's time zone, to the second; absent ones as "–". */
export function timestamp(iso: string | null | undefined): string {
  if (!iso) return ABSENT;
  const at = new Date(iso);
  return Number.isNaN(at.getTime()) ? iso : at.toLocaleString(undefined, { hour12: false });
}

export function clock(ms: number): string {
  return new Date(ms).toLocaleTimeString(undefined, { hour12: false, hour: '2-digit', minute: '2-digit' });
}

/** What a schedule's last fire came to: its job's status, why it made none, or nothing yet. */
export function lastFireOutcome(lastFire: { job_status?: string | null; skipped?: string | null } | null | undefined): string {
  if (!lastFire) return ABSENT;
  if (lastFire.skipped) return `skipped: ${lastFire.skipped}`;
  return lastFire.job_status ? lastFire.job_status.replace('_', ' ') : 'job gone';
}

/** Dollars to the cent, and a sum under a cent to two significant digits, so a quiet queue's bill does not read as nothing. */
export function dollars(value: number): string {
  if (value === 0) return '$0';
  return value < 0.01 ? `$${value.toPrecision(2)}` : `$${value.toFixed(2)}`;
}

/** Job data is any JSON: shown as indented JSON text, never as markup. */
export function json(value: unknown): string {
  return value === undefined ? ABSENT : JSON.stringify(value, null, 2);
}
