/**
 * The `eventbridge` target: puts the job on a bus as one event when it is due,
 * which makes it a delayed event. A refused entry is sent again a few times
 * before the attempt fails and the retry policy takes over.
 */
import { putEventsResendingRefused, type EventBridgeClient } from '../aws/eventbridge.js';
import { PayloadTooLargeError } from '../domain/errors.js';
import type { Job } from '../domain/job.js';
import type { JobType } from '../domain/job-type.js';
import { utf8Bytes } from '../domain/json-size.js';
import { failed, jobEnvelope, type TargetOutcome, type TargetRun } from './target.js';

export interface EventBridgeTargetOptions {
  /** PutEvents calls per attempt, the first included. @default 3 */
  maxCalls?: number;
  sleep?: (ms: number) => Promise<void>;
}

type EventTarget = { bus: string; detailType: string; source: string };

/** PutEvents refuses an entry of 256 KB or more, counted as eventEntryBytes does. */
export const MAX_EVENT_ENTRY_BYTES = 256 * 1024;

/** What PutEvents counts for an entry's time, whatever the time. */
const TIME_BYTES = 14;

/** An entry's size as PutEvents counts it: its time, source, detail type and detail, in UTF-8. */
export function eventEntryBytes(target: Pick<EventTarget, 'source' | 'detailType'>, detail: string): number {
  return TIME_BYTES + utf8Bytes(target.source) + utf8Bytes(target.detailType) + utf8Bytes(detail);
}

function jobDetail(job: Readonly<Job>): string {
  return JSON.stringify(jobEnvelope(job));
}

/**
 * For a type with an `eventbridge` target, a PayloadTooLargeError naming `data` when the job's event would be
 * refused at its last attempt (the envelope around the data grows with the attempt's digits); nothing for other
 * targets. Checked at enqueue, so such a job is never stored only to fail every attempt.
 */
export function assertJobFitsTarget(jobType: Pick<JobType, 'target'>, job: Job): void {
  const { target } = jobType;
  if (target.kind !== 'eventbridge') return;
  const bytes = eventEntryBytes(target, jobDetail({ ...job, attempt: job.maxAttempts }));
  if (bytes >= MAX_EVENT_ENTRY_BYTES) {
    throw new PayloadTooLargeError(
      'data',
      `the job's event would be ${bytes} bytes with its envelope, source and detail type; EventBridge takes less than ${MAX_EVENT_ENTRY_BYTES}`,
    );
  }
}

export async function runEventBridgeTarget(
  run: TargetRun,
  target: EventTarget,
  client: EventBridgeClient,
  options: EventBridgeTargetOptions = {},
): Promise<TargetOutcome> {
  const detail = jobDetail(run.job);
  const bytes = eventEntryBytes(target, detail);
  // Enqueue refuses such data, but a job queued before its type's target became this one may still carry it:
  // sending it again could never succeed.
  if (bytes >= MAX_EVENT_ENTRY_BYTES) {
    return failed('EventTooLargeError', `the event is ${bytes} bytes; EventBridge takes less than ${MAX_EVENT_ENTRY_BYTES}`, { retryable: false });
  }
  const entry = {
    EventBusName: target.bus,
    Source: target.source,
    DetailType: target.detailType,
    Detail: detail,
    Time: new Date(run.nowMs()),
  };
  const { eventIds, refusal } = await putEventsResendingRefused(client, [entry], { ...options, signal: run.signal });
  // Without a refusal the one entry was accepted, with its event id.
  if (refusal) return failed(refusal.code, refusal.message);
  return { kind: 'succeeded', result: { event_id: eventIds[0] } };
}
