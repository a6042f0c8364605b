/**
 * The `eventbridge` target: puts the job on a bus as one event when it is due,
 * which makes it a delayed event. PutEvents may refuse an entry while
 * accepting the call (throttling, an internal error); a refused entry is sent
 * again a few times before the attempt fails and the retry policy takes over.
 */
import { PutEventsCommand, type EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { failed, jobEnvelope, type TargetOutcome, type TargetRun } from './target.js';

export interface EventBridgeTargetOptions {
  /** PutEvents calls per attempt, the first included. @default 3 */
  maxCalls?: number;
  sleep?: (ms: number) => Promise<void>;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function runEventBridgeTarget(
  run: TargetRun,
  target: { bus: string; detailType: string; source: string },
  client: EventBridgeClient,
  options: EventBridgeTargetOptions = {},
): Promise<TargetOutcome> {
  const maxCalls = options.maxCalls ?? 3;
  const sleep = options.sleep ?? defaultSleep;
  const entry = {
    EventBusName: target.bus,
    Source: target.source,
    DetailType: target.detailType,
    Detail: JSON.stringify(jobEnvelope(run.job)),
    Time: new Date(run.nowMs()),
  };
  let lastFailure: TargetOutcome = failed('PutEventsError', 'the event was not put');
  for (let call = 1; call <= maxCalls; call++) {
    if (call > 1) await sleep(100 * 2 ** (call - 2));
    if (run.signal.aborted) break;
    try {
      const { FailedEntryCount, Entries } = await client.send(new PutEventsCommand({ Entries: [entry] }), { abortSignal: run.signal });
      const accepted = Entries?.[0];
      if (!FailedEntryCount && accepted?.EventId) return { kind: 'succeeded', result: { event_id: accepted.EventId } };
      lastFailure = failed(accepted?.ErrorCode ?? 'PutEventsError', accepted?.ErrorMessage ?? 'the entry was refused');
    } catch (error) {
      lastFailure = failed(error instanceof Error ? error.name : 'PutEventsError', error instanceof Error ? error.message : String(error));
    }
  }
  return lastFailure;
}
