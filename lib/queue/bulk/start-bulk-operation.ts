/** Bulk operation requests: recording one for the sweepers to run, and reading it back. */
import { type BulkRequest, type BulkOperation, newOperation } from '../../domain/bulk.js';
import { NotFoundError } from '../../domain/errors.js';
import type { JobType } from '../../domain/job-type.js';
import { itemToOperation } from '../../store/items.js';
import { operationKey } from '../../store/keys.js';
import { newOperationParams } from '../../store/operations.js';
import { getItem, putItem } from '../../store/send.js';
import type { QueueContext } from '../context.js';

/**
 * Records a new operation, to be run by the sweepers; the same type and request while its operation is kept
 * (until RETENTION_DAYS after it ended) is that operation again, `created: false`.
 */
export async function startBulkOperation(
  ctx: QueueContext,
  jobType: JobType,
  request: BulkRequest,
  by: string,
): Promise<{ operation: BulkOperation; created: boolean }> {
  const operation = newOperation(jobType.name, request, by, ctx.nowMs());
  const written = await putItem(ctx, newOperationParams(operation));
  // Sweepers run operations: the waker reads this write on the table's stream and wakes one (queue/wake/wake-on-write.ts).
  if (written.ok) return { operation, created: true };
  return { operation: written.current ? itemToOperation(written.current) : await requireOperation(ctx, operation.id), created: false };
}

export async function getOperation(ctx: QueueContext, id: string): Promise<BulkOperation | undefined> {
  const item = await getItem(ctx, operationKey(id), { consistentRead: true });
  return item ? itemToOperation(item) : undefined;
}

export async function requireOperation(ctx: QueueContext, id: string): Promise<BulkOperation> {
  const operation = await getOperation(ctx, id);
  if (!operation) throw new NotFoundError(`operation "${id}" does not exist`);
  return operation;
}
