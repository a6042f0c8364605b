/**
 * The `eventbridge` target: puts the job on a bus as one event when it is due,
 * which makes it a delayed event. A refused entry is sent again a few times
 * before the attempt fails and the retry policy takes over.
 */
import { putEventsResendingRefused, type EventBridgeClient } from '../aws/eventbridge.js';
import { failed, jobEnvelope, type TargetOutcome, type TargetRun } from './target.js';

export interface EventBridgeTargetOptions {
  /** PutEvents calls per attempt, the first included. @default 3 */
  maxCalls?: number;
  sleep?: (ms: number) => Promise<void>;
}

export async function runEventBridgeTarget(
  run: TargetRun,
  target: { bus: string; detailType: string; source: string },
  client: EventBridgeClient,
  options: EventBridgeTargetOptions = {},
): Promise<TargetOutcome> {
  const entry = {
    EventBusName: target.bus,
    Source: target.source,
    DetailType: target.detailType,
    Detail: JSON.stringify(jobEnvelope(run.job)),
    Time: new Date(run.nowMs()),
  };
  const { eventIds, refusal } = await putEventsResendingRefused(client, [entry], { ...options, signal: run.signal });
  // Without a refusal the one entry was accepted, with its event id.
  if (refusal) return failed(refusal.code, refusal.message);
  return { kind: 'succeeded', result: { event_id: eventIds[0] } };
}
