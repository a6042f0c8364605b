/** How the dashboard reads a schedule's last fire, and dollars. */
import { expect, test } from 'vitest';
import { ABSENT, dollars, lastFireOutcome } from '../../../dashboard/format.js';

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

test('dollars read to the cent', () => {
  expect(dollars(1.234)).toBe('$1.23');
});

test('a sum under a cent keeps two significant digits rather than reading as nothing', () => {
  expect(dollars(0.000123)).toBe('$0.00012');
});

test('nothing reads as $0', () => {
  expect(dollars(0)).toBe('$0');
});
