/** How the dashboard reads a schedule's last fire. */
import { expect, test } from 'vitest';
import { ABSENT, lastFireOutcome } from '../../../dashboard/format.js';

test('a schedule that never fired shows a dash', () => {
  expect(lastFireOutcome(null)).toBe(ABSENT);
});

test('a fire that made a job shows that job status', () => {
  expect(lastFireOutcome({ job_status: 'awaiting_callback', skipped: null })).toBe('awaiting callback');
});

test('a skipped fire says why', () => {
  expect(lastFireOutcome({ job_status: null, skipped: 'overlap: job a@b of an earlier fire had not finished' })).toBe('skipped: overlap: job a@b of an earlier fire had not finished');
});

test('a job removed since (its retention ran out) reads as gone', () => {
  expect(lastFireOutcome({ job_status: null, skipped: null })).toBe('job gone');
});
