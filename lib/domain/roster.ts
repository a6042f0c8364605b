/** The roster of live processes: who each poller and worker is, and when it was last seen. */
export const ROSTER_ROLES = ['poller', 'worker'] as const;
export type RosterRole = (typeof ROSTER_ROLES)[number];

export interface RosterMember {
  role: RosterRole;
  /** Made once per process: a Lambda container keeps it across invocations. */
  id: string;
  host: string;
  startedAtMs: number;
  /** The shards a poller polls; a worker has none. */
  shards?: number[];
}

export interface RosterEntry extends RosterMember {
  lastSeenAtMs: number;
}
