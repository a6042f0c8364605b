/**
 * A running attempt's first renewal comes before its claim lapses. A worker takes a claim up with at least half the
 * visibility timeout left (holdClaim), and renews every half timeout once the attempt runs: whatever its start takes
 * in between (an at_most_once job's own start record) must not push the first renewal past the deadline, where the
 * sweeper, which the waker holds awake for a claim's lapse, may hand it back while its handler runs.
 *
 * Found by a soak of the waker's delivery faults (Invokes hanging 30 s): renewals of at_most_once jobs
 * whose batch reached the worker about half a timeout after their claim left after the deadline.
 */
import type { FinalizeHandler, FinalizeHandlerArguments, MetadataBearer } from '@smithy/types';
import { expect, test } from 'vitest';
import { withoutSecrets } from '../../../../../lib/domain/job-type.js';
import { claimJob } from '../../../../../lib/queue/attempt/claim.js';
import { runWorkerBatch } from '../../../../../lib/queue/attempt/run-batch.js';
import { WORKER, defineType, enqueue, freshQueuePerTest } from '../../../../support/lib-fixtures.js';
import { realClock } from '../../../../support/queue.js';

const queue = freshQueuePerTest({ clock: () => realClock });
const VISIBILITY_TIMEOUT_S = 2;
/** How long the job's start record takes to land: a write under load. */
const START_RECORD_MS = 300;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// Failed while the worker's first renewal counted from the attempt's start, not from the claim's deadline.
test('an at_most_once job taken up with just over half its visibility timeout left, its start record slow, is renewed before its claim lapses', async () => {
  const { ctx } = queue();
  const type = await defineType(ctx, 'once', { delivery_strategy: 'at_most_once', attempts: 1, visibility_timeout_s: VISIBILITY_TIMEOUT_S });
  await enqueue(ctx, type, 'j');
  const claimed = await claimJob(ctx, { type: 'once', id: 'j' }, type);
  if (claimed.kind !== 'claimed' || claimed.job.claimedUntilMs === undefined) throw new Error('the job could not be claimed');
  const deadlineMs = claimed.job.claimedUntilMs;

  const renewalsSentAtMs: number[] = [];
  queue()
    .clientsOf('worker')
    .base.middlewareStack.addRelativeTo(
      (next: FinalizeHandler<object, MetadataBearer>) => async (args: FinalizeHandlerArguments<object>) => {
        const condition = (args.input as { ConditionExpression?: string }).ConditionExpression ?? '';
        if (condition.endsWith('AND claimedUntilMs < :until')) renewalsSentAtMs.push(Date.now());
        if (condition.includes('attribute_not_exists(startedAtMs)')) await sleep(START_RECORD_MS);
        return next(args);
      },
      { relation: 'after', toMiddleware: 'retryMiddleware', name: 'slowStartRecord' },
    );
  // The batch reaches the worker with a tenth of a second more than half the timeout left: no renewal before the start.
  await sleep(deadlineMs - (VISIBILITY_TIMEOUT_S * 1000) / 2 - 100 - Date.now());
  const outcome = await runWorkerBatch(
    queue().as('worker'),
    { jobs: [claimed.job], jobTypes: { once: withoutSecrets(type) } },
    {
      registry: { handlers: { once: () => sleep(VISIBILITY_TIMEOUT_S * 1000).then(() => 'done') }, retryPolicies: {} },
      worker: WORKER,
    },
  );

  expect(outcome.succeeded).toBe(1);
  expect(renewalsSentAtMs.length).toBeGreaterThan(0);
  expect(renewalsSentAtMs[0]).toBeLessThan(deadlineMs);
});
