/**
 * A poller and worker in a process of their own, so a test can kill it with
 * SIGKILL, not an exception. Modes:
 * - `slow-worker`: runs every job it claims with a handler that never ends,
 *   printing `started <id>` as each starts;
 * - `crash-before-dispatch`: claims due jobs, then dies as it hands the first batch over.
 * Each runs under its role in the stack (STACK_POLICIES, from the test run); a
 * denied call ends the process with a message, so the test cannot pass.
 */
import { createLocalIam } from '../../infra/local/aws/iam/local-iam.js';
import { LOCAL_ACCOUNT_ID } from '../../infra/local/aws/iam/local-policies.js';
import type { StackPolicies } from '../../infra/local/aws/iam/stack-policies.js';
import { createQueueContext } from '../../lib/queue/context.js';
import { readQueueSettings } from '../../lib/queue/settings.js';
import { runPollerLoop } from '../../lib/queue/poll/poller-loop.js';
import type { WorkerInvoker } from '../../lib/domain/invocations.js';
import { runWorkerBatch } from '../../lib/queue/attempt/run-batch.js';

const mode = process.argv[2];
const settings = readQueueSettings(process.env);
const iam = createLocalIam(
  JSON.parse(process.env.STACK_POLICIES ?? '') as StackPolicies,
  { region: 'us-east-1', accountId: LOCAL_ACCOUNT_ID, tableName: settings.tableName },
  {
    onDecision: ({ fn, request, allowed }) => {
      if (allowed) return;
      process.stderr.write(`denied by the stack's IAM policies: ${fn} ${request.action} on ${request.resource} ${JSON.stringify(request.context)}\n`);
      process.exit(3);
    },
  },
);
const contextOf = (fn: 'poller' | 'worker') =>
  createQueueContext(iam.dynamoClientsFor(fn, { endpoint: process.env.DYNAMODB_ENDPOINT }).db, settings);

const worker = contextOf('worker');
const invoker: WorkerInvoker = iam.invokerFor(
  'poller',
  mode === 'crash-before-dispatch'
    ? {
        invoke: async () => {
          process.stdout.write('claimed\n');
          process.kill(process.pid, 'SIGKILL');
        },
      }
    : {
        invoke: async (batch) => {
          void runWorkerBatch(worker, batch, {
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
      },
);

await runPollerLoop(contextOf('poller'), { invoker, runForMs: 120_000, jobTypesRefreshMs: 500 });
