/**
 * A poller and worker in a process of their own, so a test can kill it with
 * SIGKILL, not an exception. Modes:
 * - `slow-worker`: runs every job it claims with a handler that never ends,
 *   printing `started <id>` as each starts;
 * - `crash-before-dispatch`: claims due jobs, then dies as it hands the first batch over.
 */
import { createQueueContext, readQueueSettings } from '../../lib/config.js';
import { createDynamoClients } from '../../lib/dynamodb.js';
import { runPollerLoop, type WorkerInvoker } from '../../lib/poller.js';
import { runWorkerBatch } from '../../lib/worker.js';

const mode = process.argv[2];
const { db } = createDynamoClients({ endpoint: process.env.DYNAMODB_ENDPOINT });
const ctx = createQueueContext(db, readQueueSettings(process.env));

const invoker: WorkerInvoker =
  mode === 'crash-before-dispatch'
    ? {
        invoke: async () => {
          process.stdout.write('claimed\n');
          process.kill(process.pid, 'SIGKILL');
        },
      }
    : {
        invoke: async (batch) => {
          void runWorkerBatch(ctx, batch, {
            registry: {
              handlers: {
                count: async (_data, { job }) => {
                  process.stdout.write(`started ${job.id}\n`);
                  await new Promise(() => undefined);
                },
              },
              retryPolicies: {},
            },
            worker: { id: `child-${process.pid}`, host: 'child' },
          });
        },
      };

await runPollerLoop(ctx, { invoker, runForMs: 120_000, jobTypesRefreshMs: 500 });
