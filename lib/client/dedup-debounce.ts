/** Dedup and debounce as the typed client sends and reads them. */

/** A dedup key and how long its window stays open after the first enqueue with it (at most the queue's retention). */
export interface Dedup {
  key: string;
  window_s: number;
}

/** A debounce key, the delay after the latest enqueue, and the longest wait after the first (default and at most 30 days). */
export interface DebounceInput {
  key: string;
  delay_s: number;
  max_wait_s?: number | undefined;
}

/** A debounced job's debounce as it answers it. */
export interface Debounce {
  key: string;
  delay_s: number;
  max_wait_s: number | null;
}
