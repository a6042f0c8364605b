/** Claim tokens that name a group and a seat, and the allocator that hands the seats out (lib/domain/claim-seats.ts). */
import { expect, test } from 'vitest';
import { MAX_SEATS_PER_GROUP, claimSeatOf, claimTokenOf, createSeatAllocator } from '../../../../lib/domain/claim-seats.js';

const GROUP = 'AbCdEfGhIj-_0123';

test('a claim token is the group, a dot and the seat', () => {
  expect(claimTokenOf({ group: GROUP, seat: 7 })).toBe(`${GROUP}.7`);
});

test('a token names its group and seat back', () => {
  expect(claimSeatOf(`${GROUP}.63`)).toStrictEqual({ group: GROUP, seat: 63 });
});

test("an older release's token, a UUID, names no seat", () => {
  expect(claimSeatOf('6f1c2a4e-8b0d-4c5e-9a7b-1d2e3f405162')).toBeUndefined();
});

test('a job without a claim token has no seat', () => {
  expect(claimSeatOf(undefined)).toBeUndefined();
});

test.each([
  ['a group one character short', `${GROUP.slice(1)}.1`],
  ['a group one character long', `${GROUP}x.1`],
  ['a seat of three digits', `${GROUP}.100`],
  ['no seat', `${GROUP}.`],
  ['text before the group', ` ${GROUP}.1`],
  ['text after the seat', `${GROUP}.1 `],
  ['a group with a character base64url lacks', `${GROUP.slice(1)}+.1`],
])('a token with %s names no seat', (_what, token) => {
  expect(claimSeatOf(token)).toBeUndefined();
});

test('seats are handed out in order, a new group after each `seatsPerGroup` of them', () => {
  const next = createSeatAllocator(2);
  const [a, b, c] = [next(), next(), next()];
  expect([a.seat, b.seat, c.seat]).toEqual([0, 1, 0]);
  expect(b.group).toBe(a.group);
  expect(c.group).not.toBe(a.group);
});

test('the groups an allocator makes give tokens that name their seat back', () => {
  const seat = createSeatAllocator(4)();
  expect(claimSeatOf(claimTokenOf(seat))).toStrictEqual(seat);
});

test('a group holds at most 64 seats, however many a batch asks for', () => {
  const next = createSeatAllocator(MAX_SEATS_PER_GROUP + 10);
  const seats = Array.from({ length: MAX_SEATS_PER_GROUP + 1 }, () => next());
  expect(seats[MAX_SEATS_PER_GROUP - 1]).toMatchObject({ group: seats[0]!.group, seat: MAX_SEATS_PER_GROUP - 1 });
  expect(seats[MAX_SEATS_PER_GROUP]!.seat).toBe(0);
  expect(seats[MAX_SEATS_PER_GROUP]!.group).not.toBe(seats[0]!.group);
});
