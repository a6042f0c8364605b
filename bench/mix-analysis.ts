/**
 * W-mix, read back from what the handler saw: each attempt's key, weight, ready time and the
 * span it ran. From that alone, replayed in time order, come the most weight in flight (the type's and each
 * key's) and, for every attempt that started, how long a slot had been free for it first.
 */
export interface AttemptSpan {
  key: string;
  weight: number;
  /** When the attempt was due: its job's run_after, or the end of the attempt before it (retries wait 0 s). */
  readyAtMs: number;
  startedAtMs: number;
  endedAtMs: number;
}

export interface MixLimits {
  typeLimit: number;
  keyLimits: Record<string, number>;
}

export interface MixAnalysis {
  maxWeight: number;
  maxWeightByKey: Record<string, number>;
  /**
   * Per start: how long its key's next attempt (the one that did start next) had been due with room for its
   * weight in both its key and the type, from the later of the two. A start that found no such room waiting
   * (it took a slot freed at that instant) counts 0. Measured from handler to handler, so it includes the
   * finish write and the slot's return as well as the poll that finds the slot.
   */
  freeSlotWaitsMs: number[];
}

interface Event {
  atMs: number;
  /** Ends before starts at one instant: a slot freed and taken at once never looks over the limit. */
  kind: 'end' | 'start';
  span: AttemptSpan;
}

export function analyseMix(spans: readonly AttemptSpan[], limits: MixLimits): MixAnalysis {
  const events: Event[] = spans.flatMap((span) => [
    { atMs: span.startedAtMs, kind: 'start' as const, span },
    { atMs: span.endedAtMs, kind: 'end' as const, span },
  ]);
  events.sort((a, b) => a.atMs - b.atMs || (a.kind === b.kind ? 0 : a.kind === 'end' ? -1 : 1));
  const startsByKey = new Map<string, AttemptSpan[]>();
  for (const span of [...spans].sort((a, b) => a.startedAtMs - b.startedAtMs)) startsByKey.set(span.key, [...(startsByKey.get(span.key) ?? []), span]);
  const nextIndex = new Map<string, number>();
  const roomSinceMs = new Map<string, number>();
  const inFlightByKey = new Map<string, number>();
  let inFlight = 0;
  const result: MixAnalysis = { maxWeight: 0, maxWeightByKey: {}, freeSlotWaitsMs: [] };

  const nextOf = (key: string) => startsByKey.get(key)?.[nextIndex.get(key) ?? 0];
  const refreshRoom = (atMs: number): void => {
    for (const key of startsByKey.keys()) {
      const next = nextOf(key);
      const fits =
        next !== undefined &&
        (inFlightByKey.get(key) ?? 0) + next.weight <= (limits.keyLimits[key] ?? Infinity) &&
        inFlight + next.weight <= limits.typeLimit;
      if (!fits) roomSinceMs.delete(key);
      else if (!roomSinceMs.has(key)) roomSinceMs.set(key, atMs);
    }
  };

  for (const { atMs, kind, span } of events) {
    const sign = kind === 'start' ? 1 : -1;
    if (kind === 'start') {
      const roomSince = roomSinceMs.get(span.key);
      result.freeSlotWaitsMs.push(roomSince === undefined ? 0 : Math.max(0, atMs - Math.max(roomSince, span.readyAtMs)));
      nextIndex.set(span.key, (nextIndex.get(span.key) ?? 0) + 1);
      roomSinceMs.delete(span.key);
    }
    inFlight += sign * span.weight;
    inFlightByKey.set(span.key, (inFlightByKey.get(span.key) ?? 0) + sign * span.weight);
    result.maxWeight = Math.max(result.maxWeight, inFlight);
    result.maxWeightByKey[span.key] = Math.max(result.maxWeightByKey[span.key] ?? 0, inFlightByKey.get(span.key) ?? 0);
    refreshRoom(atMs);
  }
  return result;
}
