/**
 * Shared set-up for the lib/ integration tests: a fresh table and clock per
 * test, job types from API-shaped bodies, invokers that record or run batches.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, beforeEach } from 'vitest';
import type { QueueContext } from '../../lib/queue/context.js';
import type { QueueSettings } from '../../lib/queue/settings.js';
import { putJobType } from '../../lib/queue/catalog/job-types.js';
import { enqueueJob } from '../../lib/queue/enqueue/enqueue.js';
import { jobKey, jobTypeKey } from '../../lib/store/keys.js';
import { updateItem } from '../../lib/store/send.js';
import { parseJobTypeDefinition } from '../../lib/wire/job-types.js';
import type { JobInput, WorkerIdentity } from '../../lib/domain/job.js';
import type { Job } from '../../lib/domain/job.js';
import type { JobType } from '../../lib/domain/job-type.js';
import { pollOnce } from '../../lib/queue/poll/poll.js';
import { type CursorCache } from '../../lib/queue/poll/poll-state.js';
import { type PollResult } from '../../lib/queue/poll/poll-state.js';
import type { WakeInvoker, WakeRequest, WakeTimer, WakeTimers, WorkerBatch, WorkerInvoker } from '../../lib/domain/invocations.js';
import type { CustomRetryPolicies } from '../../lib/domain/retry.js';
import { runWorkerBatch } from '../../lib/queue/attempt/run-batch.js';
import { markStarted, recordBatchStarts } from '../../lib/queue/attempt/claim.js';
import type { BatchResult, JobHandler } from '../../lib/queue/attempt/run-batch.js';
import { asFunction, createTestQueue, type TestClock, type TestQueue } from './queue.js';

export const T0 = Date.parse('2026-11-21T10:00:00.000Z');
export const WORKER: WorkerIdentity = { id: 'worker-1', host: 'host-a' };

/** A fresh table and manual clock (at T0) for every test, dropped after it. */
export function freshQueuePerTest(
  options: { settings?: Partial<QueueSettings>; clock?: () => TestClock; random?: () => number; waker?: WakeInvoker; wakeTimers?: WakeTimers } = {},
): () => TestQueue {
  let queue: TestQueue | undefined;
  beforeEach(async () => {
    queue = await createTestQueue({
      ...(options.settings ? { settings: options.settings } : {}),
      ...(options.clock ? { clock: options.clock() } : {}),
      ...(options.random ? { random: options.random } : {}),
      ...(options.waker ? { waker: options.waker } : {}),
      ...(options.wakeTimers ? { wakeTimers: options.wakeTimers } : {}),
    });
  });
  afterEach(async () => {
    await queue?.drop();
    queue = undefined;
  });
  return () => {
    if (!queue) throw new Error('the queue exists only inside a test');
    return queue;
  };
}

/** Creates a job type from an API-shaped body (defaults applied by the real schema). */
export async function defineType(ctx: QueueContext, name: string, body: Record<string, unknown> = {}): Promise<JobType> {
  return (await putJobType(ctx, name, parseJobTypeDefinition({ target: { kind: 'handler', name }, ...body }))).jobType;
}

/**
 * A job type as a release before types said from when their lanes' bucket directory is complete made it: without
 * `directoryFromMs`, so its walks trust the directory only from where their cursors adopted it.
 */
export async function defineTypeOfOlderRelease(ctx: QueueContext, name: string, body: Record<string, unknown> = {}): Promise<JobType> {
  const { directoryFromMs: _dropped, ...jobType } = await defineType(ctx, name, body);
  await updateItem(ctx, { Key: jobTypeKey(name), UpdateExpression: 'REMOVE directoryFromMs' });
  return jobType;
}

export async function enqueue(
  ctx: QueueContext,
  jobType: JobType,
  id: string,
  input: Partial<JobInput> = {},
): Promise<{ job: Job; created: boolean }> {
  return enqueueJob(ctx, jobType, id, { data: { id }, priority: 100, weight: 1, ...input });
}

/** The raw item as DynamoDB holds it, store-only attributes included. */
export async function readItem(queue: TestQueue, type: string, id: string): Promise<Record<string, unknown> | undefined> {
  const { Item } = await queue.clients.db.send(
    new GetCommand({ TableName: queue.tableName, Key: jobKey(type, id), ConsistentRead: true }),
  );
  return Item;
}

/** Records every batch and runs nothing: the worker never reports, as if it died. */
/** Records every timer armed, and sends nothing; `failNext` refuses the next batch, as SQS may. */
export class RecordingTimers implements WakeTimers {
  readonly armed: { timer: WakeTimer; delayS: number }[] = [];
  failNext = false;
  async arm(timers: readonly { timer: WakeTimer; delayS: number }[]): Promise<void> {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('SQS refused the batch');
    }
    this.armed.push(...timers);
  }
}

/** Records every wake a function asks for, and starts nothing: a test invokes the poller and sweeper itself. */
export class RecordingWaker implements WakeInvoker {
  readonly requests: WakeRequest[] = [];
  async wake(request: WakeRequest): Promise<void> {
    this.requests.push(request);
  }
}

export class RecordingInvoker implements WorkerInvoker {
  readonly batches: WorkerBatch[] = [];
  async invoke(batch: WorkerBatch): Promise<void> {
    this.batches.push(structuredClone(batch));
  }
  get jobs(): Job[] {
    return this.batches.flatMap((batch) => batch.jobs);
  }
}

/** Records every batch and records its start as the worker does, then runs nothing: a worker that died mid-job. */
export class DyingInvoker extends RecordingInvoker {
  constructor(
    private readonly ctx: QueueContext,
    private readonly worker: WorkerIdentity = WORKER,
  ) {
    super();
  }
  override async invoke(batch: WorkerBatch): Promise<void> {
    await super.invoke(batch);
    const starts = await recordBatchStarts(asFunction(this.ctx, 'worker'), batch.jobs, this.worker);
    // Jobs of older tokens record a start of their own.
    for (const job of batch.jobs) if (!starts.has(job)) await markStarted(asFunction(this.ctx, 'worker'), job, this.worker);
  }
}

/** Runs each batch in-process through the real worker, as the local runtime does. */
export class RunningInvoker implements WorkerInvoker {
  readonly results: BatchResult[] = [];
  readonly batches: WorkerBatch[] = [];
  /** Outcomes the worker could not record; a test expects none. */
  readonly errors: unknown[] = [];
  constructor(
    private readonly ctx: QueueContext,
    private readonly handlers: Record<string, JobHandler>,
    private readonly retryPolicies: CustomRetryPolicies = {},
    private readonly worker: WorkerIdentity = WORKER,
  ) {}
  async invoke(batch: WorkerBatch): Promise<void> {
    this.batches.push(structuredClone(batch));
    this.results.push(
      await runWorkerBatch(asFunction(this.ctx, 'worker'), batch, {
        registry: { handlers: this.handlers, retryPolicies: this.retryPolicies },
        worker: this.worker,
        onError: (_job, error) => this.errors.push(error),
      }),
    );
  }
}

export class FailingInvoker implements WorkerInvoker {
  calls = 0;
  /** Each batch whose invoke failed: Lambda may have queued it all the same. */
  readonly batches: WorkerBatch[] = [];
  async invoke(batch: WorkerBatch): Promise<void> {
    this.calls++;
    this.batches.push(structuredClone(batch));
    throw new Error('Lambda invoke failed');
  }
}

/** One poll of the given types with a fresh cursor cache (cursors are then read from the table). */
export function poll(ctx: QueueContext, jobTypes: JobType[], invoker: WorkerInvoker, cursors: CursorCache = new Map()): Promise<PollResult> {
  return pollOnce(asFunction(ctx, 'poller'), { jobTypes, invoker, cursors });
}
