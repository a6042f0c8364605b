/**
 * The roster of live pollers and workers: each process keeps one item saying
 * who it is and when it was last seen, so an operator can tell which pollers
 * run on which shards and which workers ran batches lately. Entries sit in the
 * due index under one partition, so reading the roster is a query, never a scan.
 *
 * A process that stops simply stops refreshing: readers leave out an entry
 * not seen for ROSTER_STALE_AFTER_MS, and DynamoDB TTL deletes it later (TTL
 * is lazy, up to days late, so it only keeps the partition small).
 */
import type { RosterEntry, RosterMember, RosterRole } from '../../domain/roster.js';
import type { QueueContext } from '../context.js';
import { recordRosterEntryParams } from '../../store/catalog.js';
import { ROSTER_PARTITION, rosterEntryName, rosterKey } from '../../store/keys.js';
import { updateItem } from '../../store/send.js';
import { listIndexedItems } from '../../store/listing.js';

/*
 * Constants, not settings: they weigh one write every 10 s per live process
 * (0.1 WRU/s, whatever the traffic) against how soon a dead process leaves the
 * list, and nothing about a deployment changes that balance.
 */
/** A process rewrites its entry at most this often. */
export const ROSTER_REFRESH_MS = 10_000;
/** Readers leave out an entry older than this: six missed refreshes, so a slow poll never hides a live poller. */
export const ROSTER_STALE_AFTER_MS = 60_000;
/** DynamoDB TTL may delete an entry this long after its last refresh. */
export const ROSTER_PURGE_AFTER_S = 300;

/** Writes the member's entry as seen now. */
export async function recordRosterEntry(ctx: QueueContext, member: RosterMember): Promise<void> {
  const nowMs = ctx.nowMs();
  const entry = {
    role: member.role,
    id: member.id,
    host: member.host,
    startedAtMs: member.startedAtMs,
    ...(member.shards ? { shards: member.shards } : {}),
    lastSeenAtMs: nowMs,
  };
  const purgeAtS = Math.floor(nowMs / 1000) + ROSTER_PURGE_AFTER_S;
  await updateItem(ctx, recordRosterEntryParams(rosterEntryName(member.role, member.id), ROSTER_PARTITION, entry, purgeAtS));
}

/** The entries refreshed within ROSTER_STALE_AFTER_MS, by role, oldest process first. */
export async function listRoster(ctx: QueueContext): Promise<Record<RosterRole, RosterEntry[]>> {
  const freshSinceMs = ctx.nowMs() - ROSTER_STALE_AFTER_MS;
  const entries = (await listIndexedItems(ctx, ROSTER_PARTITION, rosterKey))
    .map(itemToRosterEntry)
    .filter((entry) => entry.lastSeenAtMs >= freshSinceMs)
    .sort((a, b) => a.startedAtMs - b.startedAtMs || a.id.localeCompare(b.id));
  return {
    poller: entries.filter((entry) => entry.role === 'poller'),
    worker: entries.filter((entry) => entry.role === 'worker'),
  };
}

function itemToRosterEntry(item: Record<string, unknown>): RosterEntry {
  return {
    role: item.role as RosterRole,
    id: String(item.id),
    host: String(item.host),
    startedAtMs: Number(item.startedAtMs),
    lastSeenAtMs: Number(item.lastSeenAtMs),
    ...(Array.isArray(item.shards) ? { shards: item.shards.map(Number) } : {}),
  };
}

/** Keeps one process's entry fresh without ever failing the work it does. */
export interface RosterHeartbeat {
  /** Writes the entry now, with `changes` applied (a poller's shards may differ from one invocation to the next). */
  refresh(changes?: Pick<RosterMember, 'shards'>): void;
  /** Writes the entry unless it was written within ROSTER_REFRESH_MS. */
  beat(): void;
  /** Resolves once no write is in flight, so a Lambda is not frozen halfway through one. Never rejects. */
  settled(): Promise<void>;
}

/** Writes go out in the background; one that fails is handed to `onError` and the next beat tries again. */
export function createRosterHeartbeat(ctx: QueueContext, member: RosterMember, onError: (error: unknown) => void): RosterHeartbeat {
  let current = member;
  // Counted from the last attempt, not the last success, so a failing store is not asked again at every poll.
  let lastAttemptAtMs = -Infinity;
  const inFlight = new Set<Promise<void>>();
  const write = (): void => {
    lastAttemptAtMs = ctx.nowMs();
    const written: Promise<void> = recordRosterEntry(ctx, current)
      .catch(onError)
      .finally(() => inFlight.delete(written));
    inFlight.add(written);
  };
  return {
    refresh(changes) {
      if (changes) current = { ...current, ...changes };
      write();
    },
    beat() {
      if (inFlight.size > 0 || ctx.nowMs() - lastAttemptAtMs < ROSTER_REFRESH_MS) return;
      write();
    },
    async settled() {
      await Promise.all(inFlight);
    },
  };
}
