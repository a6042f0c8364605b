/**
 * Claims are made in groups the size of a worker batch, and a claim's token names its group and its seat in it:
 * `<group>.<seat>`. A worker records the start of a whole group in one write (store/start-records.ts) instead of
 * one write per job, and the sweeper, finding a lapsed claim, reads its group's record to tell an attempt that
 * started from a claim no worker ever took up. Tokens of older releases (UUIDs, no seat) keep a start of their own
 * on the job.
 */
import { randomBytes } from 'node:crypto';

export interface ClaimSeat {
  group: string;
  seat: number;
}

const GROUP_BYTES = 12;
const CLAIM_TOKEN = /^([A-Za-z0-9_-]{16})\.(\d{1,2})$/;

export function claimTokenOf({ group, seat }: ClaimSeat): string {
  return `${group}.${seat}`;
}

/** The group and seat a claim token names; undefined for a token without one (an older release's UUID). */
export function claimSeatOf(claimToken: string | undefined): ClaimSeat | undefined {
  const match = claimToken === undefined ? null : CLAIM_TOKEN.exec(claimToken);
  return match ? { group: match[1]!, seat: Number(match[2]) } : undefined;
}

/**
 * Seats in one group at most: a start record's write names each seat it takes in its condition, and DynamoDB
 * takes expressions of at most 4 KB (about 30 characters a seat).
 */
export const MAX_SEATS_PER_GROUP = 64;

/**
 * Hands out seats in order, `seatsPerGroup` (at most MAX_SEATS_PER_GROUP) to a group: the claims of one poll's
 * slice go to workers in batches of that many, so a batch's jobs mostly share one group, and its start is one write.
 */
export function createSeatAllocator(seatsPerGroup: number): () => ClaimSeat {
  const perGroup = Math.min(seatsPerGroup, MAX_SEATS_PER_GROUP);
  let group = '';
  let seat = perGroup;
  return () => {
    if (seat >= perGroup) {
      group = randomBytes(GROUP_BYTES).toString('base64url');
      seat = 0;
    }
    return { group, seat: seat++ };
  };
}
