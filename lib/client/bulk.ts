/** The client's bulk operations: start a retry or cancel of many jobs of a type, and follow its progress. */
import type { Requester } from './transport.js';
import { wireBody } from './wire.js';

/**
 * `POST /v1/jobs/{type}/bulk`: what to act on. `from` and `to` bound the finish time (retry) or ready time (cancel);
 * `tag` narrows the selection to the jobs with that tag. A cancel with `include_running: true` cancels started jobs
 * too (running ones are asked to stop, ones awaiting their callback end), and may then select them by status.
 */
export type BulkBody =
  | { action: 'retry'; status: 'failed' | 'expired'; from?: Date | string; to?: Date | string; throttle_key?: string; tag?: string }
  | { action: 'cancel'; status: 'queued'; from?: Date | string; to?: Date | string; throttle_key?: string; tag?: string; include_running?: boolean }
  | {
      action: 'cancel';
      status: 'running' | 'awaiting_callback';
      from?: Date | string;
      to?: Date | string;
      throttle_key?: string;
      tag?: string;
      include_running: true;
    };

/** A bulk operation as `GET /v1/operations/{id}` answers it. */
export interface BulkOperation {
  id: string;
  type: string;
  action: 'retry' | 'cancel';
  status: 'failed' | 'expired' | 'queued' | 'running' | 'awaiting_callback';
  from: string | null;
  /** A retry started without `to` stops at the jobs finished when it started. */
  to: string | null;
  throttle_key: string | null;
  tag: string | null;
  /** A cancel that cancels started jobs too. */
  include_running: boolean;
  state: 'running' | 'succeeded' | 'failed';
  /** Jobs selected so far; each is then done, skipped (no longer in the status when acted on) or failed. */
  matched: number;
  done: number;
  skipped: number;
  failed: number;
  pages: number;
  /** The id of the key that started it. */
  by: string;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
}

export interface BulkMethods {
  /**
   * Starts a bulk operation, run in the background. Retried: the same type and body is the same operation (while it
   * is kept), so a repeat returns it rather than starting a second.
   */
  startBulk(type: string, body: BulkBody): Promise<BulkOperation>;
  /** A bulk operation's progress; needs read scope on its type. */
  getOperation(id: string): Promise<BulkOperation>;
}

export function bulkMethods(request: Requester): BulkMethods {
  return {
    startBulk: (type, body) => request({ method: 'POST', path: ['v1', 'jobs', type, 'bulk'], body: wireBody(body), idempotent: true }),
    getOperation: (id) => request({ method: 'GET', path: ['v1', 'operations', id], idempotent: true }),
  };
}
