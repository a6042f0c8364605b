/** Bodies as the API takes them, for every client method that sends times. */

/**
 * `body` with the fields left undefined left out and its top-level times (`run_after`, `expires_at`,
 * `start_at`, `end_at`: a `Date` or an ISO string) as ISO strings.
 */
export function wireBody(body: object): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(body)
      .filter(([, value]) => value !== undefined)
      .map(([name, value]) => [name, value instanceof Date ? value.toISOString() : value]),
  );
}
