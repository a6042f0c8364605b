/**
 * Reading a map keyed by names that come from requests, data or stored items (throttle keys, retry policies,
 * handlers, job types): only the map's own entries count, so a name such as "constructor", "toString" or
 * "__proto__" finds nothing rather than a member every object inherits from its prototype.
 */
export function ownEntry<T>(map: Readonly<Record<string, T>>, name: string): T | undefined {
  // oxlint-disable-next-line own-names/no-lookup-by-name -- the one read by name, after Object.hasOwn
  return Object.hasOwn(map, name) ? map[name] : undefined;
}
