/**
 * Set-up for the bulk operation tests: finished jobs written straight into the table (thousands of them, faster
 * than running each to its end), queued jobs enqueued as producers do, and an operation run page by page.
 */
import { BatchWriteCommand, type BatchWriteCommandOutput } from '@aws-sdk/lib-dynamodb';
import type { JobStatus } from '../../lib/domain/job.js';
import type { JobType } from '../../lib/domain/job-type.js';
import { newJob } from '../../lib/domain/new-job.js';
import { runOperationPage } from '../../lib/queue/bulk/run-bulk-operations.js';
import { getOperation } from '../../lib/queue/bulk/start-bulk-operation.js';
import type { QueueContext } from '../../lib/queue/context.js';
import { enqueueBatch } from '../../lib/queue/enqueue/enqueue-batch.js';
import { jobToItem } from '../../lib/store/items.js';
import { finishedIndexKeys, jobKey } from '../../lib/store/keys.js';
import type { TestQueue } from './queue.js';

export interface FinishedJob {
  id: string;
  status: Extract<JobStatus, 'failed' | 'expired'>;
  finishedAtMs: number;
  throttleKey?: string;
}

/** Writes finished jobs as the worker leaves them: terminal, listed under their status by finish time. */
export async function seedFinished(queue: TestQueue, jobType: JobType, jobs: FinishedJob[]): Promise<void> {
  const items = jobs.map(({ id, status, finishedAtMs, throttleKey }) => {
    const queued = newJob(jobType, id, { data: { id }, priority: 100, weight: 1, ...(throttleKey ? { throttleKey } : {}) }, finishedAtMs - 1_000);
    const job = { ...queued, status, attempt: 1, finishedAtMs, updatedAtMs: finishedAtMs };
    return { ...jobKey(jobType.name, id), ...finishedIndexKeys(queue.ctx.settings, job, status, finishedAtMs), ...jobToItem(job) };
  });
  const chunks = Array.from({ length: Math.ceil(items.length / 25) }, (_, index) => items.slice(index * 25, index * 25 + 25));
  // Eight writes in flight: fast enough for thousands, gentle on the shared DynamoDB Local.
  for (let start = 0; start < chunks.length; start += 8) {
    await Promise.all(
      chunks.slice(start, start + 8).map(async (chunk) => {
        let request: Record<string, unknown>[] | undefined = chunk.map((Item) => ({ PutRequest: { Item } }));
        while (request && request.length > 0) {
          const written: BatchWriteCommandOutput = await queue.clients.db.send(new BatchWriteCommand({ RequestItems: { [queue.tableName]: request } }));
          request = written.UnprocessedItems?.[queue.tableName];
        }
      }),
    );
  }
}

/** Enqueues queued jobs of `jobType`, each due at its `runAfterMs` (now when absent). */
export async function seedQueued(ctx: QueueContext, jobType: JobType, jobs: { id: string; runAfterMs?: number; throttleKey?: string }[]): Promise<void> {
  for (let start = 0; start < jobs.length; start += 100) {
    const batch = jobs.slice(start, start + 100).map(({ id, runAfterMs, throttleKey }, index) => ({
      index,
      id,
      input: { data: { id }, priority: 100, weight: 1, ...(runAfterMs !== undefined ? { runAfterMs } : {}), ...(throttleKey ? { throttleKey } : {}) },
    }));
    for (const outcome of await enqueueBatch(ctx, jobType, batch)) if (!outcome.ok) throw outcome.error;
  }
}

/** Runs the operation's pages until it is over, as the sweeper would; returns the pages run. */
export async function runToEnd(ctx: QueueContext, operationId: string, maxPages = 10_000): Promise<number> {
  for (let pages = 0; pages < maxPages; pages++) {
    if ((await getOperation(ctx, operationId))?.state !== 'running') return pages;
    await runOperationPage(ctx, operationId);
  }
  throw new Error(`operation ${operationId} still running after ${maxPages} pages`);
}
