/**
 * One construct fixes how every function of the queue is built and run, and
 * grants each only the calls its code makes: a new function (the authorizer,
 * say) is one `new QueueFunction` and a line of grants.
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ArnFormat, Duration, Names, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IEventBus } from 'aws-cdk-lib/aws-events';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, Runtime, type IFunction } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type CfnLogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { ConfigError } from '../lib/domain/errors.js';
import { DUE_INDEX, PARTITION_PREFIX, type PartitionFamily } from '../lib/store/keys.js';

/** This package's root: the repository's checkout, or its folder under an app's node_modules. */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The specifier the functions import their handler module by (package.json "imports"). */
export const HANDLER_MODULE_SPECIFIER = '#handler-module';

const LOCK_FILES = ['package-lock.json', 'pnpm-lock.yaml', 'yarn.lock', 'bun.lock', 'bun.lockb'];

/**
 * The lock file of the project this package is installed in (this repository's own, when run from a
 * checkout): NodejsFunction bundles from the folder that holds it, where esbuild and every dependency are found.
 */
export function projectLockFile(from: string = REPO_ROOT): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const lockFile = LOCK_FILES.map((name) => join(dir, name)).find((path) => existsSync(path));
    if (lockFile) return lockFile;
    if (dirname(dir) === dir) throw new ConfigError(`no lock file (${LOCK_FILES.join(', ')}) in ${from} or any folder above it: install the app's dependencies first`);
  }
}

/** The functions of the stack, each with a role of its own. */
export const QUEUE_FUNCTIONS = ['api', 'authorizer', 'poller', 'worker', 'sweeper', 'waker'] as const;
export type QueueFunctionName = (typeof QUEUE_FUNCTIONS)[number];

export interface QueueFunctionProps {
  /** The directory under functions/ whose index.ts is the Lambda entry. */
  entry: string;
  description: string;
  environment: Record<string, string>;
  timeout: Duration;
  memorySizeMb: number;
  logRetention: RetentionDays;
  /** The CloudWatch namespace of the function's EMF metrics; its service dimension is `entry`. */
  metricsNamespace: string;
  reservedConcurrentExecutions?: number;
  /** The handler module bundled in place of the built-in handlers (an absolute path); the built-in ones when absent. */
  handlerModule?: string;
  /** Give the function a physical name of its own (`literalName`), for functions that others, or it itself, must name. */
  named?: boolean;
}

/**
 * A function's name and ARN as literal text, made from the construct's path and its stack's name (so two
 * queues in one stack, or one app deployed as two stacks, never share one). A function named through a
 * reference to its resource depends on it: the poller and the sweeper, woken by every function and by
 * themselves, would make the stack a dependency cycle, which CloudFormation refuses.
 */
export interface LiteralFunctionName {
  name: string;
  arn: string;
}

/** Lambda's limit on a function name. */
const FUNCTION_NAME_MAX_CHARS = 64;

/**
 * The DynamoDB calls lib/ makes on items of the base table. A transaction is
 * authorized item by item as these (ConditionCheckItem for a condition check);
 * Query here means a query of the base table's own partitions.
 */
export type ItemCall = 'GetItem' | 'PutItem' | 'UpdateItem' | 'DeleteItem' | 'BatchGetItem' | 'ConditionCheckItem' | 'Query';

/** What one function may do with the table (see table-grants.ts). */
export interface TableGrants {
  /** Calls on base-table items, each limited to the partition families listed. */
  items: Partial<Record<ItemCall, PartitionFamily[]>>;
  /** Queries of the due index: lanes, listings of types, keys and the roster. */
  queriesDueIndex: boolean;
}

export class QueueFunction extends Construct {
  readonly function: NodejsFunction;
  readonly role: Role;
  readonly logGroup: LogGroup;
  /** The function's name and ARN without a reference to it, when it is `named`. */
  readonly literalName: LiteralFunctionName | undefined;

  constructor(scope: Construct, id: string, props: QueueFunctionProps) {
    super(scope, id);
    this.literalName = props.named ? literalNameOf(this) : undefined;
    this.logGroup = new LogGroup(this, 'Logs', { retention: props.logRetention, removalPolicy: RemovalPolicy.DESTROY });
    // An own role rather than AWSLambdaBasicExecutionRole: that managed policy may write to any log group.
    this.role = new Role(this, 'Role', { assumedBy: new ServicePrincipal('lambda.amazonaws.com'), description: `${props.entry} function` });
    this.role.addToPolicy(
      new PolicyStatement({ actions: ['logs:CreateLogStream', 'logs:PutLogEvents'], resources: [`${this.logGroup.logGroupArn}:*`] }),
    );
    const depsLockFilePath = projectLockFile();
    this.function = new NodejsFunction(this, 'Function', {
      entry: join(REPO_ROOT, 'functions', props.entry, 'index.ts'),
      handler: 'handler',
      ...(this.literalName ? { functionName: this.literalName.name } : {}),
      projectRoot: dirname(depsLockFilePath),
      depsLockFilePath,
      description: props.description,
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySizeMb,
      timeout: props.timeout,
      role: this.role,
      logGroup: this.logGroup,
      ...(props.reservedConcurrentExecutions !== undefined ? { reservedConcurrentExecutions: props.reservedConcurrentExecutions } : {}),
      environment: {
        ...props.environment,
        POWERTOOLS_SERVICE_NAME: props.entry,
        POWERTOOLS_METRICS_NAMESPACE: props.metricsNamespace,
        // Stack traces point into functions/ and lib/ rather than into the minified bundle.
        NODE_OPTIONS: '--enable-source-maps',
      },
      bundling: {
        format: OutputFormat.ESM,
        target: 'node22',
        sourceMap: true,
        sourcesContent: false,
        minify: true,
        // The deployed code uses the SDK versions the tests ran against, not whichever the runtime ships.
        externalModules: [],
        mainFields: ['module', 'main'],
        // Bundled CommonJS dependencies call require(); an ES module has none unless it makes one.
        banner: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
        forceDockerBundling: false,
        // The worker runs the handler module's handlers; the api and the sweeper read its names and retry policies.
        ...(props.handlerModule ? { esbuildArgs: { '--alias': `${HANDLER_MODULE_SPECIFIER}=${props.handlerModule}` } } : {}),
      },
    });
    const logGroupId = Stack.of(this).getLogicalId(this.logGroup.node.defaultChild as CfnLogGroup);
    Validations.of(this.role).acknowledge({
      id: `AwsSolutions::AwsSolutions-IAM5[Resource::<${logGroupId}.Arn>:*]`,
      reason: "Lambda names its log streams at run time; the wildcard covers the streams of this function's own log group only.",
    });
    Validations.of(this.function).acknowledge({
      id: 'AwsSolutions::AwsSolutions-L1',
      reason: 'Node.js 22 is the runtime this code is built and tested for; moving to a newer one is a deliberate upgrade with its own test run.',
    });
  }

  /**
   * Exactly `calls`, on the items of the partition families `families` only.
   * Every call granted here names its partitions, so `ForAllValues` never
   * meets the empty set that would make it true for any item.
   */
  allowItems(table: ITable, calls: ItemCall[], families: PartitionFamily[]): this {
    this.role.addToPolicy(
      new PolicyStatement({
        actions: calls.map((call) => `dynamodb:${call}`),
        resources: [table.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': families.map((family) => `${PARTITION_PREFIX[family]}*`) } },
      }),
    );
    return this;
  }

  /** Queries of the due index (lanes, listings). Its partitions are lanes, not items, so no key condition applies. */
  allowDueIndexQuery(table: ITable): this {
    this.role.addToPolicy(new PolicyStatement({ actions: ['dynamodb:Query'], resources: [`${table.tableArn}/index/${DUE_INDEX}`] }));
    return this;
  }

  /** Every grant of `grants`: one statement per call, naming the families that call may touch. */
  allowTable(table: ITable, grants: TableGrants): this {
    for (const [call, families] of Object.entries(grants.items) as [ItemCall, PartitionFamily[]][]) this.allowItems(table, [call], families);
    if (grants.queriesDueIndex) this.allowDueIndexQuery(table);
    return this;
  }

  /** Invoking `targets` (the functions themselves, not their versions or aliases). */
  allowInvoke(...targets: (IFunction | string)[]): this {
    const resources = targets.map((target) => (typeof target === 'string' ? target : target.functionArn));
    if (resources.length > 0) this.role.addToPolicy(new PolicyStatement({ actions: ['lambda:InvokeFunction'], resources }));
    return this;
  }

  /**
   * Reading the callback token parameter `parameterArn`, its latest version and the one before, and nothing else of
   * Parameter Store; with `create`, creating it too, never overwriting it (`ssm:Overwrite`), as its first signer
   * does. A SecureString under the AWS managed key aws/ssm needs no KMS grant: that key lets every principal of the
   * account decrypt through Parameter Store what it may read there.
   */
  allowCallbackTokenParameter(parameterArn: string, access: { create: boolean }): this {
    this.role.addToPolicy(new PolicyStatement({ actions: ['ssm:GetParameter'], resources: [parameterArn] }));
    if (access.create) {
      this.role.addToPolicy(new PolicyStatement({ actions: ['ssm:PutParameter'], resources: [parameterArn], conditions: { StringEquals: { 'ssm:Overwrite': 'false' } } }));
    }
    return this;
  }

  /** Sending events to `buses`. */
  allowPutEvents(...buses: (IEventBus | string)[]): this {
    const resources = buses.map((bus) => (typeof bus === 'string' ? bus : bus.eventBusArn));
    if (resources.length > 0) this.role.addToPolicy(new PolicyStatement({ actions: ['events:PutEvents'], resources }));
    return this;
  }
}

function literalNameOf(scope: Construct): LiteralFunctionName {
  const name = Names.uniqueResourceName(scope, { maxLength: FUNCTION_NAME_MAX_CHARS, separator: '-', allowedSpecialCharacters: '-_' });
  const arn = Stack.of(scope).formatArn({ service: 'lambda', resource: 'function', resourceName: name, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
  return { name, arn };
}
