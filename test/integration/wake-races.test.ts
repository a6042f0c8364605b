/**
 * Writers racing a holder of the wake item (lib/queue/wake.ts, lib/queue/awake.ts) when DynamoDB's answers go
 * missing: a writer decides whether to wake from the wake item as its hold left it, never from an older read.
 */
import type { FinalizeHandler, FinalizeHandlerArguments, MetadataBearer } from '@smithy/types';
import { describe, expect, test } from 'vitest';
import { LEASE_MS } from '../../lib/queue/awake.js';
import type { WakeRequest } from '../../lib/queue/wake-invoker.js';
import { wakeKey } from '../../lib/store/keys.js';
import { stopLeaseParams, takeLeaseParams, writeWake } from '../../lib/store/wake.js';
import { faultError } from '../support/faults.js';
import { T0, defineType, enqueue, freshQueuePerTest } from './lib-fixtures.js';

class RecordingWaker {
  readonly requests: WakeRequest[] = [];
  async wake(request: WakeRequest): Promise<void> {
    this.requests.push(request);
  }
}

const waker = new RecordingWaker();
const queue = freshQueuePerTest({ waker });

describe('a writer whose hold landed but whose answer was lost', () => {
  test('wakes a poller when the holder stopped between its read and its hold', async () => {
    const { ctx, as, clientsOf } = queue();
    const key = wakeKey('poller', 0);
    await writeWake(ctx, takeLeaseParams(key, { ownerId: 'holder', awakeUntilMs: T0 + LEASE_MS, ownerEndsAtMs: T0 + 50_000 }));
    const jobType = await defineType(ctx, 'raced');
    let lost = 0;
    clientsOf('api').base.middlewareStack.addRelativeTo(
      (next: FinalizeHandler<object, MetadataBearer>) => async (args: FinalizeHandlerArguments<object>) => {
        if (lost > 0 || !JSON.stringify(args.input).includes('holdUntilMs = :hold')) return next(args);
        lost++;
        // The holder's look found nothing and it stopped just before the hold landed; the hold's answer is lost,
        // and the SDK's second try finds the hold already there.
        await writeWake(ctx, stopLeaseParams(key, 'holder', T0, undefined));
        await next(args);
        throw faultError('ConnectionResetAfterApply');
      },
      { relation: 'after', toMiddleware: 'retryMiddleware', name: 'stopThenLoseHoldAnswer' },
    );
    waker.requests.length = 0;
    await enqueue(as('api'), jobType, 'j1', { runAfterMs: T0 + 20_000 });
    expect(lost).toBe(1);
    expect(waker.requests).toEqual([{ role: 'poller', shards: [0, 1, 2, 3] }]);
  });
});
