/**
 * A map whose entries live `ttlMs` from when they were set, at most `maxEntries` of them: what a process
 * keeps of answers it may act on for a while (job types, the authorizer's answers). Entries sit in the order
 * they were set, so the expired ones are always at the front and dropping them costs only what expired.
 */
export interface ExpiringMap<V> {
  /** The value set within the last `ttlMs`, else undefined. */
  get(key: string): V | undefined;
  /** Sets `value` from now on; the oldest entry gives way when the map is full. */
  set(key: string, value: V): void;
  delete(key: string): void;
}

export function createExpiringMap<V>(options: { ttlMs: number; maxEntries: number; nowMs: () => number }): ExpiringMap<V> {
  const entries = new Map<string, { setAtMs: number; value: V }>();
  const dropExpired = (nowMs: number): void => {
    for (const [key, entry] of entries) {
      if (nowMs - entry.setAtMs < options.ttlMs) break;
      entries.delete(key);
    }
  };
  return {
    get(key) {
      dropExpired(options.nowMs());
      return entries.get(key)?.value;
    },
    set(key, value) {
      const nowMs = options.nowMs();
      entries.delete(key);
      dropExpired(nowMs);
      if (entries.size >= options.maxEntries) entries.delete(entries.keys().next().value!);
      entries.set(key, { setAtMs: nowMs, value });
    },
    delete(key) {
      entries.delete(key);
    },
  };
}
