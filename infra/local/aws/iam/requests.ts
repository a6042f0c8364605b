/**
 * What IAM evaluates for one SDK call: the actions, the resource ARNs and the
 * condition keys, as AWS documents them. A transaction is authorized item by
 * item as the item's own action (DynamoDB has no TransactWriteItems action);
 * a batch as the batch action on each table, with every key it touches.
 */
import { TABLE_SCHEMA } from '../../../../lib/store/table.js';
import { arnOf, parameterArn, type LocalAccount } from './local-policies.js';

export interface IamRequest {
  action: string;
  resource: string;
  context: Record<string, string | string[]>;
}

/** The condition keys these requests carry; a policy conditioned on any other cannot be checked here. */
export const SUPPLIED_CONDITION_KEYS = ['dynamodb:leadingkeys', 'dynamodb:enclosingoperation', 'ssm:overwrite'];

type Input = Record<string, any>;

/** A key attribute as the document client passes it (a string) or as the wire carries it (`{ S: … }`). */
function stringOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && value !== null && typeof (value as { S?: unknown }).S === 'string') return (value as { S: string }).S;
  throw new Error(`the local IAM check expected a string key attribute, got ${JSON.stringify(value)}`);
}

const tableArn = (account: LocalAccount, tableName: string): string => arnOf(tableName, account, 'dynamodb', (name) => `table/${name}`);

const leadingKeyOf = (key: Input | undefined): string => stringOf(key?.[TABLE_SCHEMA.partitionKey]);

/** The partition key value a query's key condition names (`pk = :v`, `#n = :v`), on the table or its index. */
function queriedPartition(input: Input): string {
  const keyAttribute = input.IndexName ? TABLE_SCHEMA.dueIndex.partitionKey : TABLE_SCHEMA.partitionKey;
  const names: Record<string, string> = input.ExpressionAttributeNames ?? {};
  for (const match of String(input.KeyConditionExpression ?? '').matchAll(/(#?[\w.]+)\s*=\s*(:\w+)/g)) {
    const [, name, placeholder] = match as unknown as [string, string, string];
    if ((names[name] ?? name) === keyAttribute) return stringOf(input.ExpressionAttributeValues?.[placeholder]);
  }
  throw new Error(`the local IAM check found no "${keyAttribute} = :value" in KeyConditionExpression "${input.KeyConditionExpression}"`);
}

const TRANSACT_WRITE_ACTIONS: Record<string, string> = {
  Put: 'dynamodb:PutItem',
  Update: 'dynamodb:UpdateItem',
  Delete: 'dynamodb:DeleteItem',
  ConditionCheck: 'dynamodb:ConditionCheckItem',
};

export function dynamoDbRequests(operation: string, input: Input, account: LocalAccount): IamRequest[] {
  const action = `dynamodb:${operation}`;
  switch (operation) {
    case 'GetItem':
    case 'UpdateItem':
    case 'DeleteItem':
      return [{ action, resource: tableArn(account, input.TableName), context: { 'dynamodb:LeadingKeys': [leadingKeyOf(input.Key)] } }];
    case 'PutItem':
      return [{ action, resource: tableArn(account, input.TableName), context: { 'dynamodb:LeadingKeys': [leadingKeyOf(input.Item)] } }];
    case 'Query': {
      const table = tableArn(account, input.TableName);
      const resource = input.IndexName ? `${table}/index/${input.IndexName}` : table;
      return [{ action, resource, context: { 'dynamodb:LeadingKeys': [queriedPartition(input)] } }];
    }
    case 'BatchGetItem':
    case 'BatchWriteItem':
      return Object.entries<Input>(input.RequestItems ?? {}).map(([tableName, request]) => {
        const keys: Input[] = Array.isArray(request)
          ? request.map((write: Input) => write.PutRequest?.Item ?? write.DeleteRequest?.Key)
          : (request.Keys ?? []);
        return { action, resource: tableArn(account, tableName), context: { 'dynamodb:LeadingKeys': [...new Set(keys.map(leadingKeyOf))] } };
      });
    case 'TransactWriteItems':
    case 'TransactGetItems':
      return (input.TransactItems as Input[]).map((item) => {
        const [kind, request] = Object.entries<Input>(item)[0]!;
        const itemAction = kind === 'Get' ? 'dynamodb:GetItem' : TRANSACT_WRITE_ACTIONS[kind];
        if (!itemAction) throw new Error(`the local IAM check does not know transaction item "${kind}"`);
        return {
          action: itemAction,
          resource: tableArn(account, request.TableName),
          context: { 'dynamodb:LeadingKeys': [leadingKeyOf(request.Key ?? request.Item)], 'dynamodb:EnclosingOperation': operation },
        };
      });
    default:
      // Table-level calls (Scan, DescribeTable, …) carry no item keys.
      return [{ action, resource: tableArn(account, String(input.TableName)), context: {} }];
  }
}

export function lambdaInvokeRequests(functionName: string, account: LocalAccount): IamRequest[] {
  return [{ action: 'lambda:InvokeFunction', resource: arnOf(functionName, account, 'lambda', (name) => `function:${name}`), context: {} }];
}

export function putEventsRequests(busNames: (string | undefined)[], account: LocalAccount): IamRequest[] {
  const arns = new Set(busNames.map((bus = 'default') => arnOf(bus, account, 'events', (name) => `event-bus/${name}`)));
  return [...arns].map((resource) => ({ action: 'events:PutEvents', resource, context: {} }));
}

/** A parameter read, by name or ARN, a version or label selector (`name:3`) naming the same parameter. */
export function getParameterRequests(nameWithSelector: string, account: LocalAccount): IamRequest[] {
  const name = nameWithSelector.replace(/:[^:/]+$/, '');
  return [{ action: 'ssm:GetParameter', resource: parameterArn(account, name), context: {} }];
}

/** A parameter written: IAM tells a creation (`ssm:Overwrite` false, the default) from an overwrite. */
export function putParameterRequests(name: string, overwrite: boolean, account: LocalAccount): IamRequest[] {
  return [{ action: 'ssm:PutParameter', resource: parameterArn(account, name), context: { 'ssm:Overwrite': String(overwrite) } }];
}

/** A queue's ARN from its URL (`https://sqs.<region>.amazonaws.com/<account>/<name>`). */
function queueArnOf(queueUrl: string): string {
  const match = /^https:\/\/sqs\.([^.]+)\.amazonaws\.com\/(\d+)\/([^/]+)$/.exec(queueUrl);
  if (!match) throw new Error(`the local IAM check does not know the queue URL ${queueUrl}`);
  const [, region, accountId, name] = match;
  return `arn:aws:sqs:${region}:${accountId}:${name}`;
}

export function sendMessageRequests(queueUrl: string): IamRequest[] {
  return [{ action: 'sqs:SendMessage', resource: queueArnOf(queueUrl), context: {} }];
}

/** What Lambda's event source mapping asks of the function's role to read a table's stream, each poll. */
export function streamReadRequests(streamArn: string): IamRequest[] {
  return ['dynamodb:DescribeStream', 'dynamodb:GetShardIterator', 'dynamodb:GetRecords'].map((action) => ({ action, resource: streamArn, context: {} }));
}

/** The IAM requests of an SDK command, by the client's service and the command's operation name. */
export function requestsOfCommand(service: string, operation: string, input: Input, account: LocalAccount): IamRequest[] {
  switch (service) {
    case 'DynamoDB':
      return dynamoDbRequests(operation, input, account);
    case 'Lambda':
      if (operation === 'Invoke') return lambdaInvokeRequests(String(input.FunctionName), account);
      break;
    case 'EventBridge':
      if (operation === 'PutEvents') return putEventsRequests((input.Entries as Input[]).map((entry) => entry.EventBusName), account);
      break;
    case 'SQS':
      // A batch is authorized as sqs:SendMessage: SQS has no action of its own for it.
      if (operation === 'SendMessage' || operation === 'SendMessageBatch') return sendMessageRequests(String(input.QueueUrl));
      break;
    case 'SSM':
      if (operation === 'GetParameter') return getParameterRequests(String(input.Name), account);
      if (operation === 'PutParameter') return putParameterRequests(String(input.Name), input.Overwrite === true, account);
      break;
  }
  throw new Error(`the local IAM check does not know what ${service} ${operation} asks of IAM; teach infra/local/aws/iam/requests.ts`);
}
