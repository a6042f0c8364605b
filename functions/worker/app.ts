/** The worker function: runs one batch of claimed jobs. */
import type { QueueContext } from '../../lib/config.js';
import type { WorkerIdentity } from '../../lib/model.js';
import type { WorkerBatch } from '../../lib/poller.js';
import type { TargetClients } from '../../lib/targets/index.js';
import { runWorkerBatch, type BatchResult, type WorkerRegistry } from '../../lib/worker.js';
import { log } from '../shared/log.js';

export function createWorkerHandler(deps: { ctx: QueueContext; registry: WorkerRegistry; worker: WorkerIdentity; targets?: TargetClients }) {
  return async (batch: WorkerBatch): Promise<BatchResult> => {
    const counts = await runWorkerBatch(deps.ctx, batch, {
      registry: deps.registry,
      worker: deps.worker,
      ...(deps.targets ? { targets: deps.targets } : {}),
      onError: (job, error) => log('error', 'could not record the outcome of a job', { type: job.type, id: job.id, attempt: job.attempt, error }),
    });
    log('info', 'worker batch done', { jobs: batch.jobs.length, ...counts });
    return counts;
  };
}
