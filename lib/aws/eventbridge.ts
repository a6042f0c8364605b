/**
 * EventBridge: putting events for the `eventbridge` target and the lifecycle
 * publisher. PutEvents may accept some entries of a call and refuse others
 * (throttling, an internal error); only the refused ones are sent again, after
 * a short backoff.
 */
import { PutEventsCommand, type EventBridgeClient, type PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import { utf8Bytes } from '../domain/json-size.js';
import type { LifecycleEvent, LifecyclePublisher } from '../domain/lifecycle-events.js';
import { backoffDelayMs } from '../domain/retry.js';
import { abortableSleep } from '../domain/sleep.js';
import { lifecycleEventDetail } from '../wire/lifecycle-events.js';

export type { EventBridgeClient, PutEventsRequestEntry };

/** PutEvents refuses a request whose entries come to 256 KB (262 144 bytes) or more, counted as putEventsEntryBytes does. */
export const PUT_EVENTS_MAX_BYTES = 256 * 1024;

/** What PutEvents counts for an entry's time, whatever the time. */
const TIME_BYTES = 14;

/** An entry's size as EventBridge counts it: its time 14 bytes, its source, detail type, detail and each resource in UTF-8. */
export function putEventsEntryBytes(entry: PutEventsRequestEntry): number {
  const text = (value: string | undefined): number => (value === undefined ? 0 : utf8Bytes(value));
  const resources = (entry.Resources ?? []).reduce((sum, resource) => sum + text(resource), 0);
  return (entry.Time !== undefined ? TIME_BYTES : 0) + text(entry.Source) + text(entry.DetailType) + text(entry.Detail) + resources;
}

/** Why entries were still not put: a refused entry's error code and message, or the error a call threw. */
export interface PutEventsRefusal {
  code: string;
  message: string;
  thrown: boolean;
}

export interface PutEventsOutcome {
  /** The event id of each entry, by its place in the request; undefined for an entry never accepted. */
  eventIds: (string | undefined)[];
  /** Set when some entry was never accepted: why the last call did not take it. */
  refusal?: PutEventsRefusal;
}

export interface PutEventsOptions {
  /** PutEvents calls, the first included. @default 3 */
  maxCalls?: number;
  sleep?: (ms: number) => Promise<void>;
  /** Stops sending again once aborted. */
  signal?: AbortSignal;
}

/** 100 ms before the first resend, doubling after each. */
const RESEND_BACKOFF = { kind: 'exponential', baseS: 0.1, factor: 2, maxS: 10, jitter: 0 } as const;

/** Puts up to ten entries, sending the refused ones again up to `maxCalls` calls in all. */
export async function putEventsResendingRefused(
  client: EventBridgeClient,
  entries: PutEventsRequestEntry[],
  options: PutEventsOptions = {},
): Promise<PutEventsOutcome> {
  const maxCalls = options.maxCalls ?? 3;
  const sleep = options.sleep ?? abortableSleep;
  const eventIds: (string | undefined)[] = entries.map(() => undefined);
  let pending = entries.map((_, index) => index);
  let refusal: PutEventsRefusal | undefined;
  for (let call = 1; call <= maxCalls && pending.length > 0; call++) {
    if (call > 1) await sleep(backoffDelayMs(RESEND_BACKOFF, call - 1, Math.random));
    if (options.signal?.aborted) break;
    try {
      const sent = pending;
      const { Entries } = await client.send(new PutEventsCommand({ Entries: sent.map((index) => entries[index]!) }), {
        ...(options.signal ? { abortSignal: options.signal } : {}),
      });
      // Entries come back in request order; a refused one has an ErrorCode and no EventId.
      pending = sent.filter((index, position) => {
        const answer = Entries?.[position];
        if (answer?.ErrorCode === undefined && answer?.EventId !== undefined) {
          eventIds[index] = answer.EventId;
          return false;
        }
        refusal = { code: answer?.ErrorCode ?? 'PutEventsError', message: answer?.ErrorMessage ?? 'the entry was refused', thrown: false };
        return true;
      });
    } catch (error) {
      refusal = {
        code: error instanceof Error ? error.name : 'PutEventsError',
        message: error instanceof Error ? error.message : String(error),
        thrown: true,
      };
    }
  }
  return pending.length > 0 ? { eventIds, refusal: refusal ?? { code: 'PutEventsError', message: 'the event was not put', thrown: false } } : { eventIds };
}

export const LIFECYCLE_EVENT_SOURCE = 'delayed-job-queue';
/** PutEvents takes at most 10 entries per call. */
const PUT_EVENTS_LIMIT = 10;

export interface EventBridgePublisherOptions {
  busName: string;
  /** Events still undelivered after every attempt, with the last error code or message. */
  onUndelivered: (events: LifecycleEvent[], reason: string) => void;
  /** Calls per chunk, the first included; only entries that failed are sent again. @default 3 */
  maxAttempts?: number;
  sleep?: (ms: number) => Promise<void>;
}

/** A lifecycle event as the entry put on bus `busName`. */
export function lifecycleEventEntry(busName: string, event: LifecycleEvent): PutEventsRequestEntry {
  return {
    EventBusName: busName,
    Source: LIFECYCLE_EVENT_SOURCE,
    DetailType: event.name,
    Detail: JSON.stringify(lifecycleEventDetail(event)),
    Time: new Date(event.atMs),
  };
}

/** Publishes lifecycle events to an EventBridge bus in chunks of ten; never rejects. */
export function createEventBridgePublisher(client: EventBridgeClient, options: EventBridgePublisherOptions): LifecyclePublisher {
  const toEntry = (event: LifecycleEvent): PutEventsRequestEntry => lifecycleEventEntry(options.busName, event);
  const publishChunk = async (chunk: LifecycleEvent[]): Promise<void> => {
    const { eventIds, refusal } = await putEventsResendingRefused(client, chunk.map(toEntry), {
      ...(options.maxAttempts !== undefined ? { maxCalls: options.maxAttempts } : {}),
      ...(options.sleep ? { sleep: options.sleep } : {}),
    });
    if (refusal) options.onUndelivered(chunk.filter((_, index) => eventIds[index] === undefined), refusal.thrown ? refusal.message : refusal.code);
  };
  return {
    publish: async (events) => {
      const chunks: LifecycleEvent[][] = [];
      for (let start = 0; start < events.length; start += PUT_EVENTS_LIMIT) chunks.push(events.slice(start, start + PUT_EVENTS_LIMIT));
      await Promise.all(chunks.map(publishChunk));
    },
  };
}
