/** The idle-types workload's billed time, added up from npm start's report lines over a window (bench/idle-types.ts). */
import { describe, expect, test } from 'vitest';
import { billedWithin } from '../../../bench/idle-types.js';
import type { LoggedReport } from '../../../bench/http-system.js';

const report = (fn: string, startedAtMs: number, durationMs: number, memorySizeMb = 1_024): LoggedReport => ({
  function: fn,
  durationMs,
  billedDurationMs: Math.ceil(durationMs),
  memorySizeMb,
  endedAtMs: startedAtMs + durationMs,
});

describe('billed time within an idle window', () => {
  test('counts a whole invocation that ran inside the window', () => {
    expect(billedWithin([report('poller', 1_000, 500)], 'poller', 0, 10_000).billedMs).toBe(500);
  });

  test("counts only the window's share of an invocation running across its edges", () => {
    const reports = [report('poller', -30_000, 40_000), report('poller', 10_000, 55_000)];
    expect(billedWithin(reports, 'poller', 0, 20_000).billedMs).toBe(10_000 + 10_000);
  });

  test('leaves out other functions and invocations outside the window', () => {
    const reports = [report('sweeper', 1_000, 500), report('poller', 30_000, 500)];
    expect(billedWithin(reports, 'poller', 0, 20_000).billedMs).toBe(0);
  });

  test("prices the billed time at the function's memory, in GB-seconds", () => {
    expect(billedWithin([report('sweeper', 0, 4_000, 256)], 'sweeper', 0, 10_000).gbSeconds).toBe(1);
  });
});
