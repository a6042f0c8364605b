/**
 * The stack's policies with every CloudFormation reference replaced by the ARN
 * of what stands in for that resource on this machine: the local table, the
 * in-memory lifecycle bus, the in-process worker. A reference this cannot
 * resolve is an error, never a guess, so a new kind of grant is noticed here.
 */
import type { PolicyDocument, QueueFunctionName, StackPolicies } from './stack-policies.js';

/** Where the local resources live in ARN terms; nothing here reaches AWS, the ARNs only have to match the policies. */
export interface LocalAccount {
  region: string;
  accountId: string;
  tableName: string;
}

export const LOCAL_ACCOUNT_ID = '000000000000';

export interface LocalPolicies {
  functions: Record<QueueFunctionName, PolicyDocument>;
  account: LocalAccount;
  arns: {
    table: string;
    lifecycleBus: string;
    workerFunction: string;
    pollerFunction: string;
    sweeperFunction: string;
    /** The callback token parameter, as Parameter Store names it in ARNs. */
    callbackTokenParameter: string;
    tableStream: string;
    wakeTimerQueue: string;
  };
  /** The waker's timer queue as its functions are told it (WAKE_TIMER_QUEUE_URL). */
  wakeTimerQueueUrl: string;
  /** The callback token parameter as its functions are told it (CALLBACK_TOKEN_PARAMETER). */
  callbackTokenParameterName: string;
}

/** The ARN of `resource` of `service` in the local account. */
export function localArn(account: LocalAccount, service: string, resource: string): string {
  return `arn:aws:${service}:${account.region}:${account.accountId}:${resource}`;
}

/** `nameOrArn` as given when it is an ARN already, else the local ARN `resource` makes of it. */
export function arnOf(nameOrArn: string, account: LocalAccount, service: string, resource: (name: string) => string): string {
  return nameOrArn.startsWith('arn:') ? nameOrArn : localArn(account, service, resource(nameOrArn));
}

/** A parameter's ARN: its name, which starts with `/`, after `parameter`. */
export function parameterArn(account: LocalAccount, nameOrArn: string): string {
  return arnOf(nameOrArn, account, 'ssm', (name) => `parameter${name.startsWith('/') ? name : `/${name}`}`);
}

interface ResourceIdentity {
  ref: string;
  arn: string;
  /** A table's stream (Fn::GetAtt StreamArn): DynamoDB Local's own has another name, so the local one is made up. */
  streamArn?: string;
}

/**
 * What `Ref` and `Fn::GetAtt Arn` give for each kind of resource a policy may name, with the logical id as its local
 * name; a function the stack names itself keeps that name, since policies then name it by it rather than by a reference.
 */
function identityOf(type: string, logicalId: string, account: LocalAccount, functionNames: Record<string, string>): ResourceIdentity {
  const { region, accountId } = account;
  const arn = (service: string, resource: string): string => localArn(account, service, resource);
  switch (type) {
    case 'AWS::DynamoDB::Table':
      return { ref: account.tableName, arn: arn('dynamodb', `table/${account.tableName}`), streamArn: arn('dynamodb', `table/${account.tableName}/stream/local`) };
    case 'AWS::Events::EventBus':
      return { ref: logicalId, arn: arn('events', `event-bus/${logicalId}`) };
    case 'AWS::Lambda::Function': {
      const name = Object.hasOwn(functionNames, logicalId) ? functionNames[logicalId]! : logicalId;
      return { ref: name, arn: arn('lambda', `function:${name}`) };
    }
    case 'AWS::SQS::Queue':
      return { ref: `https://sqs.${region}.amazonaws.com/${accountId}/${logicalId}`, arn: arn('sqs', logicalId) };
    case 'AWS::Logs::LogGroup':
      return { ref: logicalId, arn: arn('logs', `log-group:${logicalId}:*`) };
    default:
      throw new Error(`the local IAM check cannot stand in for a ${type} (${logicalId}); teach infra/local/aws/iam/local-policies.ts its ARN`);
  }
}

function resolveValue(value: unknown, lookup: (logicalId: string) => ResourceIdentity, account: LocalAccount): unknown {
  if (Array.isArray(value)) return value.map((item) => resolveValue(item, lookup, account));
  if (typeof value !== 'object' || value === null) return value;
  const entries = Object.entries(value);
  const [intrinsic, argument] = entries[0] ?? [];
  if (entries.length === 1 && intrinsic === 'Ref') {
    const name = String(argument);
    if (name === 'AWS::Partition') return 'aws';
    if (name === 'AWS::Region') return account.region;
    if (name === 'AWS::AccountId') return account.accountId;
    if (name === 'AWS::URLSuffix') return 'amazonaws.com';
    return lookup(name).ref;
  }
  if (entries.length === 1 && intrinsic === 'Fn::GetAtt') {
    const [logicalId, attribute] = argument as [string, string];
    const identity = lookup(logicalId);
    if (attribute === 'StreamArn' && identity.streamArn !== undefined) return identity.streamArn;
    if (attribute !== 'Arn') throw new Error(`the local IAM check cannot resolve Fn::GetAtt ${logicalId}.${attribute}`);
    return identity.arn;
  }
  if (entries.length === 1 && intrinsic === 'Fn::Join') {
    const [separator, parts] = argument as [string, unknown[]];
    return parts.map((part) => String(resolveValue(part, lookup, account))).join(separator);
  }
  if (entries.length === 1 && intrinsic?.startsWith('Fn::')) {
    throw new Error(`the local IAM check cannot resolve ${intrinsic}; teach infra/local/aws/iam/local-policies.ts`);
  }
  return Object.fromEntries(entries.map(([key, item]) => [key, resolveValue(item, lookup, account)]));
}

export function localPolicies(stack: StackPolicies, account: LocalAccount): LocalPolicies {
  const lookup = (logicalId: string): ResourceIdentity => {
    const type = stack.resourceTypes[logicalId];
    if (type === undefined) throw new Error(`a policy refers to ${logicalId}, which is not a resource of the stack`);
    return identityOf(type, logicalId, account, stack.functionNames);
  };
  const functions = Object.fromEntries(
    Object.entries(stack.functions).map(([name, document]) => [name, resolveValue(document, lookup, account)]),
  ) as Record<QueueFunctionName, PolicyDocument>;
  return {
    functions,
    account,
    arns: {
      table: lookup(stack.logicalIds.table).arn,
      lifecycleBus: lookup(stack.logicalIds.lifecycleBus).arn,
      workerFunction: lookup(stack.logicalIds.workerFunction).arn,
      pollerFunction: lookup(stack.logicalIds.pollerFunction).arn,
      sweeperFunction: lookup(stack.logicalIds.sweeperFunction).arn,
      callbackTokenParameter: parameterArn(account, stack.callbackTokenParameterName),
      tableStream: lookup(stack.logicalIds.table).streamArn!,
      wakeTimerQueue: lookup(stack.logicalIds.wakeTimerQueue).arn,
    },
    wakeTimerQueueUrl: lookup(stack.logicalIds.wakeTimerQueue).ref,
    callbackTokenParameterName: stack.callbackTokenParameterName,
  };
}
