/**
 * What a function's code is handed here so that each of its AWS calls meets
 * its role (and DynamoDB's rules that DynamoDB Local does not check, see
 * ../dynamodb-rules.ts): DynamoDB clients, SDK clients for targets, the lifecycle publisher,
 * the worker invoker and the waker, each checked against that function's policy. The
 * in-memory publisher and the in-process invokers reach no AWS service, but on
 * AWS they are `events:PutEvents` and `lambda:InvokeFunction` calls, so they
 * are checked as those. With an index lag, every function's queries on the
 * `due` index also answer as AWS's eventually consistent index may (../index-lag.ts).
 * Every one of them is refused to an invocation past its Lambda timeout (../lambda-timeout.ts), and counted by the
 * meter, when given, as AWS would bill it (../meter.ts).
 */
import { createDynamoClients, type DynamoClients, type DynamoClientOptions } from '../../../../lib/store/client.js';
import type { LifecyclePublisher } from '../../../../lib/domain/lifecycle-events.js';
import type { WorkerInvoker, WakeInvoker } from '../../../../lib/domain/invocations.js';
import { TABLE_SCHEMA } from '../../../../lib/store/table.js';
import { enforceAwsRules } from '../dynamodb-rules.js';
import { IndexJournal } from '../index-journal.js';
import { consistentReader, lagIndexOf } from '../index-lag.js';
import { assertWithinTimeout, cutAtLambdaTimeout } from '../lambda-timeout.js';
import type { Meter } from '../meter.js';
import { checkCallsOf, createIamCheck, type IamCheck, type IamDecision } from './iam-check.js';
import { localPolicies, type LocalAccount } from './local-policies.js';
import { lambdaInvokeRequests, putEventsRequests } from './requests.js';
import type { QueueFunctionName, StackPolicies } from './stack-policies.js';

export interface LocalIam {
  check: IamCheck;
  dynamoClientsFor(fn: QueueFunctionName, options: DynamoClientOptions): DynamoClients;
  /** `client` (Lambda, EventBridge, SQS, SSM) with every command checked against `fn`'s role. */
  sdkClientFor<Client extends Parameters<typeof checkCallsOf>[0]>(fn: QueueFunctionName, client: Client, service: string): Client;
  /** `publisher` as the lifecycle bus `fn` sends to on AWS. */
  publisherFor(fn: QueueFunctionName, publisher: LifecyclePublisher): LifecyclePublisher;
  /** `invoker` as the asynchronous invoke of the worker function `fn` makes on AWS. */
  invokerFor(fn: QueueFunctionName, invoker: WorkerInvoker): WorkerInvoker;
  /** `waker` as the asynchronous invoke of the poller or the sweeper function `fn` makes on AWS. */
  wakerFor(fn: QueueFunctionName, waker: WakeInvoker): WakeInvoker;
  /** The journal behind the index lag, once a client uses it; undefined without a lag. */
  indexJournal(): IndexJournal | undefined;
}

export interface LocalIamOptions {
  onDecision?: (decision: IamDecision) => void;
  /** How far the `due` index lags the table for every function's queries (../index-lag.ts); 0, the default, not at all. */
  indexLagMs?: number;
  /** The clock the lag is measured on, the functions' own: Date.now by default, a test's clock in tests. */
  indexLagClock?: () => number;
  /** Counts what each function's calls would cost deployed. */
  meter?: Meter;
}

export function createLocalIam(stack: StackPolicies, account: LocalAccount, options: LocalIamOptions = {}): LocalIam {
  const check = createIamCheck(localPolicies(stack, account), options);
  const { arns } = check.policies;
  const indexLagMs = options.indexLagMs ?? 0;
  const { meter } = options;
  // One journal for every function, as AWS has one index: what one function writes, another's query sees late.
  let journal: IndexJournal | undefined;
  const journalFor = (clientOptions: DynamoClientOptions): IndexJournal =>
    (journal ??= new IndexJournal(indexLagMs, consistentReader(createDynamoClients(clientOptions).db, account.tableName), options.indexLagClock));
  return {
    check,
    dynamoClientsFor(fn, clientOptions) {
      const clients = createDynamoClients(clientOptions);
      checkCallsOf(clients.base, 'DynamoDB', check.forFunction(fn));
      enforceAwsRules(clients.base, [TABLE_SCHEMA.partitionKey, TABLE_SCHEMA.sortKey]);
      if (indexLagMs > 0) lagIndexOf(clients.base, journalFor(clientOptions), account.tableName);
      cutAtLambdaTimeout(clients.base);
      meter?.dynamoDbClient(fn, clients.base);
      return clients;
    },
    indexJournal: () => journal,
    sdkClientFor: (fn, client, service) => {
      meter?.sdkClient(fn, client, service);
      return cutAtLambdaTimeout(checkCallsOf(client, service, check.forFunction(fn)));
    },
    publisherFor: (fn, publisher) => ({
      publish: async (events) => {
        if (events.length > 0) {
          await check.forFunction(fn).authorize(putEventsRequests([arns.lifecycleBus], account));
          assertWithinTimeout();
          meter?.lifecycleEventsPut(fn, events);
        }
        await publisher.publish(events);
      },
    }),
    invokerFor: (fn, invoker) => ({
      invoke: async (batch) => {
        await check.forFunction(fn).authorize(lambdaInvokeRequests(arns.workerFunction, account));
        assertWithinTimeout();
        meter?.asyncInvoke('worker', Buffer.byteLength(JSON.stringify(batch)));
        await invoker.invoke(batch);
      },
    }),
    wakerFor: (fn, waker) => ({
      wake: async (request) => {
        const woken = request.role === 'poller' ? arns.pollerFunction : arns.sweeperFunction;
        await check.forFunction(fn).authorize(lambdaInvokeRequests(woken, account));
        assertWithinTimeout();
        await waker.wake(request);
      },
    }),
  };
}
