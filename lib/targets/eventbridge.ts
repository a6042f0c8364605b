/**
 * The `eventbridge` target: puts the job on a bus as one event when it is due,
 * which makes it a delayed event. A refused entry is sent again a few times
 * before the attempt fails and the retry policy takes over.
 */
import { PUT_EVENTS_MAX_BYTES, putEventsEntryBytes, putEventsResendingRefused, type EventBridgeClient, type PutEventsRequestEntry } from '../aws/eventbridge.js';
import { PayloadTooLargeError } from '../domain/errors.js';
import type { Job } from '../domain/job.js';
import type { JobType } from '../domain/job-type.js';
import { failed, jobEnvelope, type TargetOutcome, type TargetRun } from './target.js';

export interface EventBridgeTargetOptions {
  /** PutEvents calls per attempt, the first included. @default 3 */
  maxCalls?: number;
  sleep?: (ms: number) => Promise<void>;
}

type EventTarget = { bus: string; detailType: string; source: string };

/** The PutEvents entry that puts `job` on the target's bus at `time`, in the attempt's trace when it has one. */
function eventEntry(target: EventTarget, job: Readonly<Job>, time: Date, traceparent: string | undefined): PutEventsRequestEntry {
  return { EventBusName: target.bus, Source: target.source, DetailType: target.detailType, Detail: JSON.stringify(jobEnvelope(job, traceparent)), Time: time };
}

/**
 * For a type with an `eventbridge` target, a PayloadTooLargeError naming `data` when the job's event would be
 * refused at its last attempt (the envelope around the data grows with the attempt's digits); nothing for other
 * targets. Checked at enqueue, so such a job is never stored only to fail every attempt.
 */
export function assertJobFitsTarget(jobType: Pick<JobType, 'target'>, job: Job): void {
  const { target } = jobType;
  if (target.kind !== 'eventbridge') return;
  // An attempt's traceparent is as long as the job's.
  const bytes = putEventsEntryBytes(eventEntry(target, { ...job, attempt: job.maxAttempts }, new Date(job.createdAtMs), job.traceparent));
  if (bytes >= PUT_EVENTS_MAX_BYTES) {
    throw new PayloadTooLargeError(
      'data',
      `the job's event would be ${bytes} bytes with its envelope, source and detail type; EventBridge takes less than ${PUT_EVENTS_MAX_BYTES}`,
    );
  }
}

export async function runEventBridgeTarget(
  run: TargetRun,
  target: EventTarget,
  client: EventBridgeClient,
  options: EventBridgeTargetOptions = {},
): Promise<TargetOutcome> {
  const entry = eventEntry(target, run.job, new Date(run.nowMs()), run.traceparent);
  const bytes = putEventsEntryBytes(entry);
  // Enqueue refuses such data, but a job queued before its type's target became this one may still carry it:
  // sending it again could never succeed.
  if (bytes >= PUT_EVENTS_MAX_BYTES) {
    return failed('EventTooLargeError', `the event is ${bytes} bytes; EventBridge takes less than ${PUT_EVENTS_MAX_BYTES}`, { retryable: false });
  }
  const { eventIds, refusal } = await putEventsResendingRefused(client, [entry], { ...options, signal: run.signal });
  // Without a refusal the one entry was accepted, with its event id.
  if (refusal) return failed(refusal.code, refusal.message);
  return { kind: 'succeeded', result: { event_id: eventIds[0] } };
}
