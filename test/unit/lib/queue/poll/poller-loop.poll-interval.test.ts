/** How long the poller waits between rounds of polls: the poll interval, shortened while jobs arrive due. */
import { expect, test } from 'vitest';
import { nextPollIntervalMs } from '../../../../../lib/queue/poll/poller-loop.js';

const settings = { pollIntervalMs: 500, minPollIntervalMs: 50 };

test('with no arrivals it is the poll interval: an idle queue polls as often as before', () => {
  expect(nextPollIntervalMs(settings, 500, 0)).toBe(500);
});

test('with arrivals it is about the time between them, so each extra poll finds one job on average', () => {
  expect(nextPollIntervalMs(settings, 500, 2)).toBe(250);
  expect(nextPollIntervalMs(settings, 250, 2)).toBe(125);
});

test('never shorter than MIN_POLL_INTERVAL_MS, however fast jobs arrive', () => {
  expect(nextPollIntervalMs(settings, 500, 1_000)).toBe(50);
});

test('never longer than the poll interval, however long the last round took', () => {
  expect(nextPollIntervalMs(settings, 5_000, 1)).toBe(500);
});

test('a minimum above the poll interval gives way to it', () => {
  expect(nextPollIntervalMs({ pollIntervalMs: 100, minPollIntervalMs: 200 }, 500, 50)).toBe(100);
});
