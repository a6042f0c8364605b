/**
 * The waker function: the table's stream (the due index's entries someone acts on, by the event source mapping's filter) and the timers
 * it armed come here, and it wakes the poller or the sweeper that must find them (lib/queue/wake/wake-on-write.ts).
 * A batch it could not handle throws, and Lambda delivers it again: stream records and timers alike are handled
 * at least once, and handling one twice wakes no one twice.
 */
import type { QueueContext } from '../../lib/queue/context.js';
import { parseWakeTimer, type WakeTimer, type WakeTimers } from '../../lib/domain/invocations.js';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { claimsJobs } from '../../lib/domain/job-type.js';
import { itemToJobType } from '../../lib/store/items.js';
import { wakingEntryOf, type WakingEntry } from '../../lib/store/keys.js';
import { TABLE_SCHEMA } from '../../lib/store/table.js';
import { wakeForTimers, wakeForWrittenEntries } from '../../lib/queue/wake/wake-on-write.js';
import { log } from '../shared/log.js';

export interface WakerDeps {
  ctx: QueueContext;
  timers: WakeTimers;
}

/** What the waker reads of a record: a stream record's new image (as DynamoDB JSON), or a timer message's body. */
interface WakerRecord {
  eventSource?: unknown;
  dynamodb?: { NewImage?: Record<string, { S?: unknown } | undefined> };
  body?: unknown;
}

/** The records of a batch, with what each says; anything else is refused, since the mappings send nothing else. */
export function readWakerEvent(event: unknown): { entries: WakingEntry[]; timers: WakeTimer[]; ignored: number } {
  const records = typeof event === 'object' && event !== null ? (event as { Records?: unknown }).Records : undefined;
  if (!Array.isArray(records)) throw new Error('the waker expects a batch of stream records or timer messages (Records)');
  const entries: WakingEntry[] = [];
  const timers: WakeTimer[] = [];
  let ignored = 0;
  for (const record of records as WakerRecord[]) {
    if (record.eventSource === 'aws:dynamodb') {
      const image = record.dynamodb?.NewImage;
      const entry = wakingEntryOf({ gsi1pk: image?.[TABLE_SCHEMA.dueIndex.partitionKey]?.S, gsi1sk: image?.[TABLE_SCHEMA.dueIndex.sortKey]?.S });
      if (!entry) ignored++;
      // A type written paused (or with no room) has nothing due: only one that claims jobs may have been resumed.
      else if (entry.kind !== 'jobType' || claimsJobs(itemToJobType(unmarshall(image as Record<string, AttributeValue>)))) entries.push(entry);
    } else if (record.eventSource === 'aws:sqs' && typeof record.body === 'string') {
      const timer = parseWakeTimer(record.body);
      if (timer) timers.push(timer);
      else ignored++;
    } else {
      throw new Error(`the waker does not handle records from ${JSON.stringify(record.eventSource)}`);
    }
  }
  return { entries, timers, ignored };
}

export function createWakerHandler(deps: WakerDeps) {
  return async (event: unknown): Promise<void> => {
    const { entries, timers, ignored } = readWakerEvent(event);
    // A record the filter should have kept away says the mapping and this code disagree.
    if (ignored > 0) log('warn', 'waker ignored records that are neither due entries nor timers', { ignored });
    await Promise.all([wakeForWrittenEntries(deps.ctx, entries, deps.timers), wakeForTimers(deps.ctx, timers)]);
  };
}
