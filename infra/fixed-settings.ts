/**
 * The settings the jobs already in a table depend on, kept in a record file committed with the app, so a
 * synth that would change them is refused before it reaches a deployed queue. A job is filed in the `due`
 * index under its BUCKET_MS-wide bucket and one of SHARDS shards, and its claim under one of CLAIM_SHARDS:
 * pollers reading other bucket widths, or fewer shards, never find the jobs filed before, nor sweepers
 * reading fewer claim shards the claims. The record is the app's own: no deployed stack is read, so the
 * check runs offline and in CI alike.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { ConfigError } from '../lib/domain/errors.js';
import type { QueueSettings } from '../lib/queue/settings.js';

/** The recorded values of one queue, by the names the settings have. */
export interface FixedSettings {
  BUCKET_MS: number;
  SHARDS: number;
  /** Absent when as many as SHARDS, as in records made before the claim lane had a count of its own. */
  CLAIM_SHARDS?: number;
}

export const SETTINGS_RECORD_FILE = 'djq-settings.json';

function isFixedSettings(value: unknown): value is FixedSettings {
  if (typeof value !== 'object' || value === null) return false;
  const entry = value as Record<string, unknown>;
  return Number.isInteger(entry.BUCKET_MS) && Number.isInteger(entry.SHARDS) && (entry.CLAIM_SHARDS === undefined || Number.isInteger(entry.CLAIM_SHARDS));
}

function readRecord(file: string): Map<string, FixedSettings> {
  if (!existsSync(file)) return new Map();
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new ConfigError(`${file} is not JSON (${(error as Error).message}); it records the settings queued jobs depend on, see docs/operations/upgrading.md`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new ConfigError(`${file} must hold an object of recorded settings by queue`);
  const record = new Map(Object.entries(parsed));
  const malformed = [...record].find(([, entry]) => !isFixedSettings(entry));
  if (malformed) throw new ConfigError(`${file}: the entry "${malformed[0]}" must be {"BUCKET_MS": <integer>, "SHARDS": <integer>}, with "CLAIM_SHARDS": <integer> when recorded`);
  return record as Map<string, FixedSettings>;
}

function writeRecord(file: string, record: Map<string, FixedSettings>): void {
  const sorted = Object.fromEntries([...record].sort(([a], [b]) => a.localeCompare(b)));
  writeFileSync(file, `${JSON.stringify(sorted, null, 2)}\n`);
}

/**
 * Refuses, with a ConfigError saying why and what to do, a BUCKET_MS other than the one recorded for
 * `queuePath` in `file`, or fewer SHARDS or CLAIM_SHARDS. Records the settings when the queue has no entry yet,
 * and more shards when they grew (new shards only add places to look).
 */
export function checkFixedSettings(file: string, queuePath: string, queue: Pick<QueueSettings, 'bucketMs' | 'shards' | 'claimShards'>): void {
  const record = readRecord(file);
  const recorded = record.get(queuePath);
  // Claim shards as many as SHARDS go unrecorded, as in the records made before they had a count of their own.
  const current: FixedSettings = { BUCKET_MS: queue.bucketMs, SHARDS: queue.shards, ...(queue.claimShards === queue.shards ? {} : { CLAIM_SHARDS: queue.claimShards }) };
  if (recorded !== undefined) {
    const undo = `To change it on purpose, deploy the queue as a new stack (or drain this one: no job left queued) and then edit or remove the entry "${queuePath}" in ${file}; see docs/operations/upgrading.md.`;
    if (recorded.BUCKET_MS !== current.BUCKET_MS) {
      throw new ConfigError(
        `BUCKET_MS is ${current.BUCKET_MS} but ${recorded.BUCKET_MS} is recorded for ${queuePath} in ${file}: the jobs already queued are filed under ${recorded.BUCKET_MS} ms buckets, which pollers reading ${current.BUCKET_MS} ms buckets would never find. ${undo}`,
      );
    }
    if (current.SHARDS < recorded.SHARDS) {
      throw new ConfigError(
        `SHARDS is ${current.SHARDS} but ${recorded.SHARDS} is recorded for ${queuePath} in ${file}: jobs filed in shards ${current.SHARDS} to ${recorded.SHARDS - 1} would never be polled. SHARDS may grow, never shrink. ${undo}`,
      );
    }
    const recordedClaimShards = recorded.CLAIM_SHARDS ?? recorded.SHARDS;
    if (queue.claimShards < recordedClaimShards) {
      throw new ConfigError(
        `CLAIM_SHARDS is ${queue.claimShards} but ${recordedClaimShards} claim-lane shards are recorded for ${queuePath} in ${file}: claims filed in shards ${queue.claimShards} to ${recordedClaimShards - 1} would never be swept, so a job whose worker died there would stay running. CLAIM_SHARDS (SHARDS when not set) may grow, never shrink. ${undo}`,
      );
    }
    if (current.SHARDS === recorded.SHARDS && queue.claimShards === recordedClaimShards) return;
  }
  record.set(queuePath, current);
  writeRecord(file, record);
}
