/**
 * Lambda's REPORT line, done locally: after each invocation the runtime logs what Lambda would have billed for
 * it, so whoever watches `npm start` (or the bench's idle measurement) can add up the Lambda duration the same
 * traffic costs deployed. Lambda bills duration per 1 ms, rounded up.
 *
 * Lambda's line also carries "Max Memory Used"; locally every function shares one process, whose RSS says
 * nothing about one function's use, so it is left out rather than reported wrong.
 */
import { log } from '../../../functions/shared/log.js';

/** The message every report line carries, so a reader of the log can pick them out. */
export const REPORT_MESSAGE = 'REPORT';
/** The message of a line adding up many invocations of a function (see `summarisedFunctions`). */
export const REPORT_SUMMARY_MESSAGE = 'REPORT summary';

/** One invocation, as Lambda's REPORT line gives it. */
export interface InvocationReport {
  function: string;
  request_id: string;
  duration_ms: number;
  billed_duration_ms: number;
  /** The function's configured memory, where the stack's settings give it. */
  memory_size_mb?: number;
  /** Only when the invocation ran into its Lambda timeout, as Lambda's `Status: timeout`. */
  status?: 'timeout';
}

/** Many invocations of one function in one period, added up. */
export interface InvocationSummary {
  function: string;
  invocations: number;
  period_ms: number;
  duration_ms: number;
  billed_duration_ms: number;
  max_duration_ms: number;
  memory_size_mb?: number;
  timeouts: number;
}

/** What Lambda bills for an invocation that ran `durationMs`: whole milliseconds, rounded up, at least one. */
export function billedDurationMs(durationMs: number): number {
  return Math.max(1, Math.ceil(durationMs));
}

export interface InvocationEnd {
  fn: string;
  requestId: string;
  durationMs: number;
  timedOut: boolean;
}

export interface InvocationReporter {
  /** Called by every invocation as it ends (./lambda-timeout.ts). */
  ended(end: InvocationEnd): void;
  /** Called with each line an invocation of `fn` writes to its log, where one hears them (./meter.ts). */
  logged?(fn: string, line: string): void;
  /** Logs what the summarised functions have not yet reported, and stops the periodic summary. */
  flush(): void;
}

export interface InvocationReporterOptions {
  /** Each function's configured memory in MB; a function not named has none in its lines. */
  memorySizesMb?: Readonly<Partial<Record<string, number>>>;
  /**
   * Functions whose invocations are added up into one line per `summaryPeriodMs` rather than logged one by one:
   * the api and the authorizer run once per request, and a line per request would bury the log of `npm start`.
   */
  summarisedFunctions?: ReadonlySet<string>;
  /** @default 60 000 */
  summaryPeriodMs?: number;
  /** Where the lines go: the runtime's log unless a test or the bench wants them. */
  write?: (message: string, fields: InvocationReport | InvocationSummary) => void;
}

const writeToLog = (message: string, fields: InvocationReport | InvocationSummary): void => log('info', message, { ...fields });

/** Rounded as Lambda prints it: two decimals. */
const hundredths = (ms: number): number => Math.round(ms * 100) / 100;

export function createInvocationReporter(options: InvocationReporterOptions = {}): InvocationReporter {
  const write = options.write ?? writeToLog;
  const memoryOf = (fn: string): { memory_size_mb?: number } => {
    const memorySizeMb = options.memorySizesMb !== undefined && Object.hasOwn(options.memorySizesMb, fn) ? options.memorySizesMb[fn] : undefined;
    return memorySizeMb === undefined ? {} : { memory_size_mb: memorySizeMb };
  };
  const summarised = options.summarisedFunctions ?? new Set<string>();
  const periodMs = options.summaryPeriodMs ?? 60_000;
  const pending = new Map<string, InvocationSummary>();
  let periodStartedAtMs = Date.now();
  const writeSummaries = (): void => {
    const periodMsSoFar = Date.now() - periodStartedAtMs;
    periodStartedAtMs = Date.now();
    for (const summary of pending.values()) write(REPORT_SUMMARY_MESSAGE, { ...summary, period_ms: periodMsSoFar, duration_ms: hundredths(summary.duration_ms) });
    pending.clear();
  };
  const timer = summarised.size > 0 ? setInterval(writeSummaries, periodMs) : undefined;
  // The summary must never keep a process alive that has nothing else to do.
  timer?.unref();
  return {
    ended({ fn, requestId, durationMs, timedOut }) {
      const billed = billedDurationMs(durationMs);
      if (!summarised.has(fn)) {
        write(REPORT_MESSAGE, { function: fn, request_id: requestId, duration_ms: hundredths(durationMs), billed_duration_ms: billed, ...memoryOf(fn), ...(timedOut ? { status: 'timeout' as const } : {}) });
        return;
      }
      const summary = pending.get(fn) ?? { function: fn, invocations: 0, period_ms: 0, duration_ms: 0, billed_duration_ms: 0, max_duration_ms: 0, ...memoryOf(fn), timeouts: 0 };
      summary.invocations += 1;
      summary.duration_ms += durationMs;
      summary.billed_duration_ms += billed;
      summary.max_duration_ms = Math.max(summary.max_duration_ms, hundredths(durationMs));
      if (timedOut) summary.timeouts += 1;
      pending.set(fn, summary);
    },
    flush() {
      clearInterval(timer);
      writeSummaries();
    },
  };
}
