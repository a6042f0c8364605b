/** A condition waited for, not a sleep: reads until the value is accepted or the limit passes. */

/**
 * Reads `read()` every `everyMs` until `accept` takes its value or `withinMs` has passed, and returns the last
 * value either way, so the test's own assertion says what it saw when the condition never came.
 */
export async function eventually<T>(read: () => Promise<T>, accept: (value: T) => boolean, withinMs = 30_000, everyMs = 50): Promise<T> {
  const giveUpAtMs = Date.now() + withinMs;
  for (;;) {
    const value = await read();
    if (accept(value) || Date.now() > giveUpAtMs) return value;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
