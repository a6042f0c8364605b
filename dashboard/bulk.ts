/**
 * "Retry all shown" and "Retry all matching" on a page of failed or expired jobs: one bulk operation each, run by
 * the server in the background, its progress shown here until it ends.
 */
import { apiPath, type BulkOperation, type Job } from './api.js';
import type { ViewContext } from './context.js';
import { h } from './dom.js';
import { describe } from './overview.js';

const RETRYABLE = new Set(['failed', 'expired']);
const PROGRESS_POLL_MS = 2_000;

const progressText = (operation: BulkOperation): string =>
  `Retry ${operation.state}: ${operation.done} replayed of ${operation.matched} found` +
  (operation.skipped + operation.failed > 0 ? `, ${operation.skipped} skipped, ${operation.failed} failed` : '');

/**
 * The buttons, or nothing for a status that cannot be retried. "Shown" bounds the operation by the finish times of
 * the jobs on the page (listed newest first, so the page is exactly the jobs between them); "matching" takes every
 * job of the status that finished by now (with the tag, on a listing by tag).
 */
export function bulkRetryControls(context: ViewContext, type: string, status: string, jobs: Job[], tag?: string): HTMLElement | null {
  const finishedAt = jobs.map((job) => job.finished_at).filter((at): at is string => at !== null);
  if (!RETRYABLE.has(status) || finishedAt.length === 0) return null;
  const note = h('span', { class: 'notice', role: 'status' });

  const follow = async (id: string) => {
    const operation = await context.api.get<BulkOperation>(`v1/operations/${apiPath(id)}`);
    note.textContent = progressText(operation);
    if (operation.state === 'running') setTimeout(() => void follow(id).catch(() => undefined), PROGRESS_POLL_MS);
  };
  const start = async (range: { from?: string; to?: string }, what: string) => {
    if (!confirm(`Replay ${what} ${status} jobs of ${type}? Each is replayed once, as a new job due now.`)) return;
    try {
      const operation = await context.api.post<BulkOperation>(`v1/jobs/${apiPath(type)}/bulk`, { action: 'retry', status, ...range, ...(tag ? { tag } : {}) });
      context.notify(`Retrying ${what} ${status} jobs of ${type} (operation ${operation.id})`, 'info');
      await follow(operation.id);
    } catch (error) {
      context.notify(`Could not retry ${status} jobs of ${type}: ${describe(error)}`, 'error');
    }
  };
  const shown = { from: finishedAt.reduce((a, b) => (a < b ? a : b)), to: finishedAt.reduce((a, b) => (a > b ? a : b)) };
  // A tag's jobs are listed by enqueue time: the finish times of a page bound more of the tag's jobs than it shows.
  const retryShown = tag
    ? null
    : h('button', { type: 'button', onclick: () => void start(shown, 'the shown'), title: 'One bulk retry of the jobs on this page' }, 'Retry all shown');
  return h(
    'p',
    { class: 'bulk-actions' },
    retryShown,
    ' ',
    h(
      'button',
      { type: 'button', onclick: () => void start({}, tag ? `all ${tag}` : 'all matching'), title: `One bulk retry of every ${status} job of ${type}${tag ? ` tagged ${tag}` : ''}` },
      'Retry all matching',
    ),
    ' ',
    note,
  );
}
