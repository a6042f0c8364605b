/**
 * The whole system on one machine: DynamoDB Local (or a given endpoint), the
 * table, the api handler behind an HTTP server, the poller and sweeper handlers
 * started by minute ticks and wakes as the stack starts them (./scheduled-functions.ts),
 * and workers run in-process through the same invoker interface the poller uses
 * with Lambda; every invocation is cut at its function's Lambda timeout (./lambda-timeout.ts).
 */
import { randomBytes } from 'node:crypto';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { join, resolve } from 'node:path';
import { createApiHandler } from '../../functions/api/app.js';
import { createAuthorizer } from '../../functions/authorizer/app.js';
import { createPollerHandler } from '../../functions/poller/app.js';
import { logLifecycleEvent, processIdentity } from '../../functions/shared/environment.js';
import { log } from '../../functions/shared/log.js';
import { createSweeperHandler } from '../../functions/sweeper/app.js';
import { createWorkerHandler } from '../../functions/worker/app.js';
import { registry as builtinRegistry } from '../../functions/worker/handlers/index.js';
import { createApiKey, verifyApiKey } from '../../lib/queue/catalog/api-keys.js';
import { createQueueContext, type QueueContext } from '../../lib/queue/context.js';
import { readQueueSettings, integerSetting, type Env, type QueueSettings } from '../../lib/queue/settings.js';
import { createDynamoClients, type DynamoClientOptions } from '../../lib/store/client.js';
import { startLocalWaker } from './waker.js';
import { LOCAL_REQUEST_PATH_DYNAMODB_CALL_LIMITS } from '../../lib/domain/limits.js';
import { createMemoryPublisher, type LifecycleEvent, type LifecyclePublisher } from '../../lib/domain/lifecycle-events.js';
import { parameterStoreSecret } from '../../lib/aws/secrets.js';
import { ensureTable } from '../../lib/store/table.js';
import type { TargetClients } from '../../lib/targets/index.js';
import type { WorkerBatch, WorkerInvoker } from '../../lib/domain/invocations.js';
import type { WorkerRegistry } from '../../lib/queue/attempt/run-batch.js';
import { KEY_AUTHORIZER_CACHE_TTL_S } from '../api-gateway.js';
import { deployContext, deployStackSettings } from '../cdk-context.js';
import { DISK_SYNC_SETTING, readDiskSync, startDynamoDbLocal, type DiskSync, type DynamoDbLocal } from './aws/dynamodb-local.js';
import type { IamDecision } from './aws/iam/iam-check.js';
import { createLocalIam, type LocalIam } from './aws/iam/local-iam.js';
import { INDEX_LAG_SETTING } from './aws/index-lag.js';
import { LOCAL_ACCOUNT_ID } from './aws/iam/local-policies.js';
import { QUEUE_FUNCTIONS, readStackPolicies, type QueueFunctionName } from './aws/iam/stack-policies.js';
import { admitted, LOCAL_API_ADMISSION, type AdmissionLimits } from './aws/admission.js';
import { createLocalAsyncInvoker, enforceEventBridgeLimits, workerDeliveryFrom, type LocalAsyncInvokerOptions, type WorkerDelivery } from './aws/limits.js';
import { startLocalMonitoring } from './aws/monitoring.js';
import { invokeWithTimeout, outsideInvocation, type InvocationContext } from './aws/lambda-timeout.js';
import { createMeter, deployedCostOf, stackHoldingsOf, type Meter } from './aws/meter.js';
import { createLocalParameterStore } from './aws/parameter-store.js';
import { createInvocationReporter } from './aws/invocation-report.js';
import { FUNCTION_MEMORY_SIZES_MB, reservedConcurrency } from '../delayed-job-queue.js';
import { functionTimeoutsS } from '../queue-stack.js';
import { createLocalGateway } from './aws/gateway.js';
import { createHttpServer } from './http-server.js';
import { createScheduledFunctions, type ScheduledFunctions } from './aws/scheduled-functions.js';

export interface LocalRuntime {
  url: string;
  /** The admin credential: API_TOKEN as given, else the admin key kept under DATA_DIR. */
  adminKey: string;
  /** Where the admin key is kept, or undefined when it is API_TOKEN. */
  adminKeyFile: string | undefined;
  tableName: string;
  /** Every lifecycle event published so far (they are logged too). */
  lifecycleEvents: LifecycleEvent[];
  dynamoEndpoint: string;
  /** What the runtime's functions have done so far, in the units AWS would bill deployed. */
  meter: Pick<Meter, 'snapshot' | 'customMetricsSentSince'>;
  stop(): Promise<void>;
}

export const ADMIN_KEY_FILE = 'admin-key';

/**
 * The admin key kept under DATA_DIR while it still works (it may have been
 * revoked, or the table replaced); otherwise a new admin key, kept there.
 */
async function localAdminKey(ctx: QueueContext, dataDir: string): Promise<string> {
  const file = join(dataDir, ADMIN_KEY_FILE);
  const kept = await readFile(file, 'utf8').then(
    (text) => text.trim(),
    () => undefined,
  );
  if (kept !== undefined) {
    const verification = await verifyApiKey(ctx, kept);
    if (verification.ok && verification.key.scopes.includes('admin')) return kept;
  }
  const { presented } = await createApiKey(ctx, { scopes: ['admin'], name: 'local admin (npm start)' });
  await writeFile(file, `${presented}\n`, { mode: 0o600 });
  return presented;
}

/** A secret as given, else the one kept in `file` under DATA_DIR, else a new one kept there. */
async function keptSecret(given: string | undefined, file: string, prefix: string): Promise<string> {
  if (given) return given;
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch {
    const secret = `${prefix}${randomBytes(24).toString('base64url')}`;
    await writeFile(file, `${secret}\n`, { mode: 0o600 });
    return secret;
  }
}

/**
 * The functions that answer requests, whose DynamoDB calls must fit inside their Lambda timeouts. They run once
 * per request, so their report lines are added up into one a minute each: a line per request would bury the
 * rest of `npm start`'s log (the poller, sweeper and worker report each invocation, as Lambda does).
 */
const REQUEST_PATHS: ReadonlySet<QueueFunctionName> = new Set(['api', 'authorizer']);

/** The functions the stack lets wake the poller and the sweeper (infra/delayed-job-queue.ts): the waker and the two themselves (a handover). */
const WAKERS: ReadonlySet<QueueFunctionName> = new Set(['poller', 'sweeper', 'waker']);

/**
 * LOCAL_STREAM_DELAY_MS: how much later than DynamoDB Local's stream has them the waker gets the table's records, on
 * top of the mapping's quarter-second polls; 0 by default, as AWS hands records over in well under a second.
 */
const STREAM_DELAY_SETTING = 'LOCAL_STREAM_DELAY_MS';

/** Each function's DynamoDB clients and queue context, as its role in the stack lets it call. */
function functionContexts(iam: LocalIam, clientOptions: DynamoClientOptions, settings: QueueSettings, events: LifecyclePublisher, scheduled: ScheduledFunctions) {
  // Request paths (api, authorizer) retry DynamoDB within their Lambda timeouts, as deployed, at DynamoDB Local's pace.
  const functionClients = QUEUE_FUNCTIONS.map(
    (fn) => [fn, iam.dynamoClientsFor(fn, { ...clientOptions, ...(REQUEST_PATHS.has(fn) ? { callLimits: LOCAL_REQUEST_PATH_DYNAMODB_CALL_LIMITS } : {}) })] as const,
  );
  const contexts = Object.fromEntries(
    functionClients.map(([fn, { db }]) => [
      fn,
      createQueueContext(db, settings, { events: iam.publisherFor(fn, events), ...(WAKERS.has(fn) ? { waker: scheduled.wakerFor(fn) } : {}) }),
    ]),
  ) as Record<QueueFunctionName, QueueContext>;
  return { functionClients, contexts };
}

export interface LocalRuntimeOptions {
  /** How worker batches reach the worker; LOCAL_WORKER_* settings otherwise (see aws-limits.ts). */
  workerDelivery?: WorkerDelivery;
  /** Each function's Lambda timeout, at which its invocations are cut (./lambda-timeout.ts): the stack's unless a test wants one shorter. */
  functionTimeoutsMs?: Partial<Record<QueueFunctionName, number>>;
  /** The handler module's handlers and retry policies (`djq dev --handlers`): the built-in ones otherwise. */
  registry?: WorkerRegistry;
}

/** The stack's timeouts for these settings, with `overridesMs` over them. */
function functionTimeoutsMs(settings: QueueSettings, overridesMs: Partial<Record<QueueFunctionName, number>> = {}): Record<QueueFunctionName, number> {
  const stackS = functionTimeoutsS(settings);
  return Object.fromEntries(QUEUE_FUNCTIONS.map((fn) => [fn, overridesMs[fn] ?? stackS[fn] * 1000])) as Record<QueueFunctionName, number>;
}

/**
 * The waker, started by the table's stream and its timer queue (the timers' batches metered as SQS deliveries), and,
 * before the first tick, the timers the poller and the sweeper arm on its queue for the work they leave as they sleep.
 */
async function startWaker(
  env: Env,
  deps: {
    iam: LocalIam;
    meter: Meter;
    contexts: Record<QueueFunctionName, QueueContext>;
    clientOptions: DynamoClientOptions;
    tableName: string;
    inFlight: Set<Promise<unknown>>;
    signal: AbortSignal;
    invoke: (fn: 'waker', run: () => Promise<void>) => Promise<void>;
  },
) {
  const { iam, meter, contexts, invoke } = deps;
  const streamDelayMs = integerSetting(env, STREAM_DELAY_SETTING, 0, 0, 600_000);
  const invokeWaker = (run: () => Promise<void>, source: 'stream' | 'timers') => (source === 'timers' ? meter.fromQueue('waker', () => invoke('waker', run)) : invoke('waker', run));
  const waker = await startLocalWaker({ iam, ctx: contexts.waker, clientOptions: deps.clientOptions, tableName: deps.tableName, inFlight: deps.inFlight, signal: deps.signal, invoke: invokeWaker, stream: { delayMs: streamDelayMs } });
  for (const fn of ['poller', 'sweeper'] as const) contexts[fn].wakeTimers = waker.timersFor(fn);
  return waker;
}

export async function startLocalRuntime(env: Env = process.env, options: LocalRuntimeOptions = {}): Promise<LocalRuntime> {
  const port = Number(env.PORT ?? 3000);
  const dataDir = resolve(env.DATA_DIR ?? '.data');
  const tableName = env.TABLE_NAME ?? 'jobs';
  const registry = options.registry ?? builtinRegistry;
  await mkdir(dataDir, { recursive: true });
  const { dynamo, endpoint } = await localDynamo(env, dataDir);
  const clientOptions = endpoint ? { endpoint } : {};
  // The operator's own access, as `npm run keys` has it: creating the table and the admin key.
  const clients = createDynamoClients(clientOptions);
  await ensureTable(clients.base, tableName);

  const settings = readQueueSettings({ ...env, TABLE_NAME: tableName });
  // Deployed, lifecycle events go to their bus, not to the log of the function that publishes them.
  const events = createMemoryPublisher((event) => outsideInvocation(() => logLifecycleEvent(event)));
  const adminKey = env.API_TOKEN || (await localAdminKey(createQueueContext(clients.db, settings, { events }), dataDir));

  // Each function runs under its role as the stack deploys it, with the deployer's own context (cdk.json).
  const stackPolicies = readStackPolicies(deployContext());
  const stack = deployStackSettings();
  const meter = createMeter({ memorySizesMb: FUNCTION_MEMORY_SIZES_MB, stack: stackHoldingsOf(stack, tableName) });
  const iam = createLocalIam(
    stackPolicies,
    { region: await clients.base.config.region(), accountId: LOCAL_ACCOUNT_ID, tableName },
    { onDecision: logDenial, indexLagMs: integerSetting(env, INDEX_LAG_SETTING, 0, 0, 600_000), meter },
  );
  const shutdown = new AbortController();
  const inFlight = new Set<Promise<unknown>>();
  const monitoring = startLocalMonitoring({ stack, tableName, onEmfLine: meter.emfLine }, shutdown.signal);
  const timeoutsMs = functionTimeoutsMs(settings, options.functionTimeoutsMs);
  const report = meter.invocations(createInvocationReporter({ memorySizesMb: FUNCTION_MEMORY_SIZES_MB, summarisedFunctions: REQUEST_PATHS }));
  // An invocation cut at its timeout may still be running: stop waits for it as for any other.
  const invoke = <T>(fn: QueueFunctionName, handler: (context: InvocationContext) => Promise<T>): Promise<T> =>
    invokeWithTimeout(fn, timeoutsMs[fn], handler, { running: inFlight, report });
  // The handlers are made from the contexts, which hold the wakers that start them: they exist by the first tick.
  const scheduled = createScheduledFunctions({ settings, iam, inFlight, signal: shutdown.signal, reservedConcurrency: reservedConcurrency(stack, settings) }, (fn, event) =>
    invoke<unknown>(fn, (context) => (fn === 'poller' ? pollerHandler(event, context) : sweeperHandler(event, context))),
  );
  const { functionClients, contexts } = functionContexts(iam, clientOptions, settings, events, scheduled);

  const secrets = callbackTokenSecrets(iam, await keptSecret(env.CALLBACK_TOKEN_SECRET, join(dataDir, 'callback-token-secret'), 'cbs_'));
  const url = env.PUBLIC_API_URL ?? `http://localhost:${port}`;
  const targets: TargetClients = {
    http: { apiBaseUrl: url, callbackTokenSecret: secrets.worker },
    lambda: iam.sdkClientFor('worker', new LambdaClient({}), 'Lambda'),
    eventBridge: enforceEventBridgeLimits(iam.sdkClientFor('worker', new EventBridgeClient({}), 'EventBridge')),
  };

  // One process runs both, so the roster shows it once as a poller and once as a worker, under one id.
  const identity = processIdentity();
  const workerHandler = createWorkerHandler({ ctx: contexts.worker, registry, worker: identity, targets, metrics: monitoring.metricsFor('worker') });
  const delivery = options.workerDelivery ?? workerDeliveryFrom(env);
  const invoker = localWorkerInvoker(iam, meter, (batch) => invoke('worker', () => workerHandler(batch)), { delivery, inFlight, signal: shutdown.signal, metrics: monitoring.workerInvokes });
  const pollerHandler = createPollerHandler({ ctx: contexts.poller, invoker, identity, signal: shutdown.signal, metrics: monitoring.metricsFor('poller') });
  const sweeperHandler = createSweeperHandler({ ctx: contexts.sweeper, registry, signal: shutdown.signal, metrics: monitoring.metricsFor('sweeper') });
  const waker = await startWaker(env, { iam, meter, contexts, clientOptions, tableName, inFlight, signal: shutdown.signal, invoke });
  const ticks = scheduled.startTicks();
  const authorizer = createAuthorizer({
    ctx: contexts.authorizer,
    ...(env.API_TOKEN ? { staticAdminToken: env.API_TOKEN } : {}),
    callbackTokenSecret: secrets.authorizer,
  });
  const api = createApiHandler({ ctx: contexts.api, registry, alarms: monitoring.alarmStates, deployedCost: () => deployedCostOf(meter.snapshot()) });
  const gateway = createLocalGateway({ authorizer, api, authorizerTimeoutMs: timeoutsMs.authorizer, apiTimeoutMs: timeoutsMs.api, authorizerCacheTtlMs: authorizerCacheTtlMs(env), report });
  const server = createHttpServer(admitted(meter.gateway(gateway), apiAdmission(env)));
  await listen(server, port);

  return {
    url,
    adminKey,
    adminKeyFile: env.API_TOKEN ? undefined : join(dataDir, ADMIN_KEY_FILE),
    tableName,
    lifecycleEvents: events.events,
    dynamoEndpoint: endpoint ?? `DynamoDB in ${await clients.base.config.region()}`,
    meter,
    stop: async () => {
      shutdown.abort();
      ticks.stop();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      // An invocation ending may still start others (a poller's worker batches): wait until none is left.
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
      report.flush();
      clients.base.destroy();
      for (const [, { base }] of functionClients) base.destroy();
      for (const client of [targets.lambda, targets.eventBridge, ...secrets.clients]) client?.destroy();
      await waker.stop();
      await dynamo?.stop();
    },
  };
}

/** A call the stack's policies would refuse on AWS: refused here too, and said loudly, whoever catches the error. */
function logDenial(decision: IamDecision): void {
  if (decision.allowed) return;
  const { fn, request } = decision;
  log('error', 'IAM check denied a call', { function: fn, action: request.action, resource: request.resource, context: request.context });
}

/** Lambda's async invoke of the worker as deployed: its payload limit and metrics, and late, throttled or twice-delivered batches when asked for. */
function localWorkerInvoker(iam: LocalIam, meter: Meter, runBatch: (batch: WorkerBatch) => Promise<unknown>, options: Omit<LocalAsyncInvokerOptions, 'onError'>): WorkerInvoker {
  const onError = (error: unknown, batch: WorkerBatch): void => {
    meter.deadLettered('worker', Buffer.byteLength(JSON.stringify(batch)));
    outsideInvocation(() => logWorkerFailure(error, batch));
  };
  return iam.invokerFor('poller', createLocalAsyncInvoker(runBatch, { ...options, onError }));
}

/** The stack sets the worker's async retryAttempts to 0: Lambda sends a batch whose invocation failed to the dead-letter queue. */
function logWorkerFailure(error: unknown, batch: WorkerBatch): void {
  const jobs = batch.jobs.map(({ type, id, attempt }) => ({ type, id, attempt }));
  log('error', 'worker invocation failed; not retried, and deployed its batch would go to the dead-letter queue', { error, jobs });
}

/**
 * The callback-token secret as the worker and the authorizer read it deployed: from one Parameter Store, each through
 * its role and with its own cache, the worker allowed to create it.
 */
function callbackTokenSecrets(iam: LocalIam, value: string) {
  const { account } = iam.check.policies;
  const name = iam.check.policies.callbackTokenParameterName;
  const store = createLocalParameterStore(account.region, { name, value });
  const clientFor = (fn: 'worker' | 'authorizer') => iam.sdkClientFor(fn, store.client(), 'SSM');
  const clients = { worker: clientFor('worker'), authorizer: clientFor('authorizer') };
  return {
    worker: parameterStoreSecret(clients.worker, name, { createIfMissing: true }),
    authorizer: parameterStoreSecret(clients.authorizer, name),
    clients: Object.values(clients),
  };
}

/** AUTHORIZER_CACHE_TTL_S, locally only: the stack's TTL unless a test or a demo of revocation wants it shorter. */
function authorizerCacheTtlMs(env: Env): number {
  return integerSetting(env, 'AUTHORIZER_CACHE_TTL_S', KEY_AUTHORIZER_CACHE_TTL_S, 0, 3600) * 1000;
}

/** LOCAL_API_CONCURRENCY and LOCAL_API_QUEUE: what the local api serves at once and lets wait, as Lambda's concurrency and API Gateway's throttle bound it deployed. */
function apiAdmission(env: Env): AdmissionLimits {
  return {
    ...LOCAL_API_ADMISSION,
    concurrency: integerSetting(env, 'LOCAL_API_CONCURRENCY', LOCAL_API_ADMISSION.concurrency, 1, 1_000),
    maxQueued: integerSetting(env, 'LOCAL_API_QUEUE', LOCAL_API_ADMISSION.maxQueued, 0, 100_000),
  };
}

/** DynamoDB as configured: an endpoint given, the AWS table (no endpoint), or a DynamoDB Local of our own under DATA_DIR. */
async function localDynamo(env: Env, dataDir: string): Promise<{ dynamo: DynamoDbLocal | undefined; endpoint: string | undefined }> {
  if (env.DYNAMODB_ENDPOINT || usesAwsTable(env)) return { dynamo: undefined, endpoint: env.DYNAMODB_ENDPOINT };
  const dynamo = await startDynamoDbLocal({ dbPath: await ensureDir(join(dataDir, 'dynamodb')), sync: localDiskSync(env) });
  return { dynamo, endpoint: dynamo.endpoint };
}

/** DYNAMODB_LOCAL_SYNC; when it flushes only because libeatmydata is missing, the way to the speed is said. */
function localDiskSync(env: Env): DiskSync {
  const diskSync = readDiskSync(env);
  if (diskSync === 'full' && !env[DISK_SYNC_SETTING]) {
    log('info', `DynamoDB Local flushes every write to the disk, which caps it near 90 jobs/s: install eatmydata (apt install eatmydata) to skip the flushes (see ${DISK_SYNC_SETTING} in docs/reference/configuration.md)`);
  }
  return diskSync;
}

/** docs/concepts/design.md#local-runtime: with AWS credentials and a table name, run against that table in the cloud. */
function usesAwsTable(env: Env): boolean {
  return Boolean(env.TABLE_NAME && (env.AWS_PROFILE || env.AWS_ACCESS_KEY_ID));
}

async function ensureDir(path: string): Promise<string> {
  await mkdir(path, { recursive: true });
  return path;
}

/**
 * Connections the kernel completes before the process accepts them. Node's 511 filled under an open-loop
 * burst while the event loop was busy, and further connects timed out unanswered (UND_ERR_CONNECT_TIMEOUT in
 * the bench's overload case); a longer queue lets admission answer them, with 429 if need be.
 */
const LISTEN_BACKLOG = 4096;

function listen(server: Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, backlog: LISTEN_BACKLOG }, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
