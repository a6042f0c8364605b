import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ParameterAlreadyExists, PutParameterCommand } from '@aws-sdk/client-ssm';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, test, vi } from 'vitest';
import { AccessDeniedException, checkCallsOf, createIamCheck, type IamDecision } from '../../../../../../infra/local/aws/iam/iam-check.js';
import type { LocalPolicies } from '../../../../../../infra/local/aws/iam/local-policies.js';
import { dynamoDbRequests, getParameterRequests, putParameterRequests } from '../../../../../../infra/local/aws/iam/requests.js';
import { createLocalParameterStore } from '../../../../../../infra/local/aws/parameter-store.js';
import { parameterStoreSecret } from '../../../../../../lib/aws/secrets.js';
import type { PolicyDocument } from '../../../../../../infra/local/aws/iam/stack-policies.js';

const account = { region: 'eu-west-1', accountId: '000000000000', tableName: 'jobs' };
const TABLE = 'arn:aws:dynamodb:eu-west-1:000000000000:table/jobs';

function policiesWith(statements: Record<string, unknown>[]): LocalPolicies {
  const document: PolicyDocument = { Version: '2012-10-17', Statement: statements };
  const empty: PolicyDocument = { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 'logs:PutLogEvents', Resource: '*' }] };
  return {
    functions: { api: document, authorizer: empty, poller: empty, worker: empty, sweeper: empty, waker: empty },
    account,
    arns: {
      table: TABLE,
      lifecycleBus: 'arn:aws:events:eu-west-1:000000000000:event-bus/b',
      workerFunction: 'arn:aws:lambda:eu-west-1:000000000000:function:w',
      pollerFunction: 'arn:aws:lambda:eu-west-1:000000000000:function:p',
      sweeperFunction: 'arn:aws:lambda:eu-west-1:000000000000:function:s',
      callbackTokenParameter: 'arn:aws:ssm:eu-west-1:000000000000:parameter/Jobs/Queue/callback-token-secret',
      tableStream: `${TABLE}/stream/local`,
      wakeTimerQueue: 'arn:aws:sqs:eu-west-1:000000000000:t',
    },
    wakeTimerQueueUrl: 'https://sqs.eu-west-1.amazonaws.com/000000000000/t',
    callbackTokenParameterName: '/Jobs/Queue/callback-token-secret',
  };
}

const onlyJobs = [
  {
    Effect: 'Allow',
    Action: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
    Resource: TABLE,
    Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['JOB#*'] } },
  },
];

describe('what IAM is asked for a DynamoDB call', () => {
  test('an item call is its own action on the table, keyed by its partition key', () => {
    expect(dynamoDbRequests('GetItem', { TableName: 'jobs', Key: { pk: 'JOB#a#1', sk: 'JOB' } }, account)).toEqual([
      { action: 'dynamodb:GetItem', resource: TABLE, context: { 'dynamodb:LeadingKeys': ['JOB#a#1'] } },
    ]);
  });

  test('a transaction is each item as its own action, with the transaction as the enclosing operation', () => {
    const requests = dynamoDbRequests(
      'TransactWriteItems',
      {
        TransactItems: [
          { Update: { TableName: 'jobs', Key: { pk: { S: 'JOB#a#1' }, sk: { S: 'JOB' } } } },
          { Put: { TableName: 'jobs', Item: { pk: { S: 'CORR#k' }, sk: { S: 'CORR' } } } },
          { ConditionCheck: { TableName: 'jobs', Key: { pk: { S: 'TYPE#a' }, sk: { S: 'TYPE' } } } },
        ],
      },
      account,
    );
    expect(requests.map((request) => [request.action, request.context])).toEqual([
      ['dynamodb:UpdateItem', { 'dynamodb:LeadingKeys': ['JOB#a#1'], 'dynamodb:EnclosingOperation': 'TransactWriteItems' }],
      ['dynamodb:PutItem', { 'dynamodb:LeadingKeys': ['CORR#k'], 'dynamodb:EnclosingOperation': 'TransactWriteItems' }],
      ['dynamodb:ConditionCheckItem', { 'dynamodb:LeadingKeys': ['TYPE#a'], 'dynamodb:EnclosingOperation': 'TransactWriteItems' }],
    ]);
  });

  test('a batch get is one request per table with every partition it reads', () => {
    const keys = [{ pk: 'TYPE#a', sk: 'TYPE' }, { pk: 'TYPE#b', sk: 'TYPE' }, { pk: 'TYPE#a', sk: 'INFLIGHT' }];
    expect(dynamoDbRequests('BatchGetItem', { RequestItems: { jobs: { Keys: keys } } }, account)).toEqual([
      { action: 'dynamodb:BatchGetItem', resource: TABLE, context: { 'dynamodb:LeadingKeys': ['TYPE#a', 'TYPE#b'] } },
    ]);
  });

  test("a query of the index is on the index's ARN, keyed by the partition its key condition names", () => {
    const input = { TableName: 'jobs', IndexName: 'due', KeyConditionExpression: '#p = :p AND gsi1sk <= :upTo', ExpressionAttributeNames: { '#p': 'gsi1pk' }, ExpressionAttributeValues: { ':p': 'Q#a#1#0', ':upTo': 'x' } };
    expect(dynamoDbRequests('Query', input, account)).toEqual([
      { action: 'dynamodb:Query', resource: `${TABLE}/index/due`, context: { 'dynamodb:LeadingKeys': ['Q#a#1#0'] } },
    ]);
  });

  test('a query whose key condition names no partition is refused by the check itself, not guessed', () => {
    expect(() => dynamoDbRequests('Query', { TableName: 'jobs', KeyConditionExpression: 'sk > :s', ExpressionAttributeValues: { ':s': 'a' } }, account)).toThrow(/KeyConditionExpression/);
  });
});

describe('the check', () => {
  test('allows a call the policy allows', async () => {
    const check = createIamCheck(policiesWith(onlyJobs)).forFunction('api');
    await expect(check.authorize(dynamoDbRequests('GetItem', { TableName: 'jobs', Key: { pk: 'JOB#a#1' } }, account))).resolves.toBeUndefined();
  });

  test('denies a call outside the partitions granted, as AWS would, naming function, action, resource and key', async () => {
    const check = createIamCheck(policiesWith(onlyJobs)).forFunction('api');
    const denial = check.authorize(dynamoDbRequests('GetItem', { TableName: 'jobs', Key: { pk: 'KEY#k1' } }, account));
    await expect(denial).rejects.toBeInstanceOf(AccessDeniedException);
    await expect(denial).rejects.toMatchObject({ name: 'AccessDeniedException', $fault: 'client' });
    await expect(denial).rejects.toThrow(/the api function's role .* dynamodb:GetItem on arn:aws:dynamodb:eu-west-1:000000000000:table\/jobs with dynamodb:LeadingKeys=KEY#k1/);
  });

  test('denies an action the policy does not name', async () => {
    const check = createIamCheck(policiesWith(onlyJobs)).forFunction('api');
    await expect(check.authorize(dynamoDbRequests('PutItem', { TableName: 'jobs', Item: { pk: 'JOB#a#1' } }, account))).rejects.toBeInstanceOf(AccessDeniedException);
  });

  test('a key outside the granted families is never decided by a cached decision for the family it resembles', async () => {
    const decisions: IamDecision[] = [];
    const check = createIamCheck(policiesWith(onlyJobs), { onDecision: (decision) => decisions.push(decision) }).forFunction('api');
    const get = (pk: string) => check.authorize(dynamoDbRequests('GetItem', { TableName: 'jobs', Key: { pk } }, account));
    await get('JOB#a#1');
    await get('JOB#b#2');
    await expect(get('JOBS-NOT-A-JOB')).rejects.toBeInstanceOf(AccessDeniedException);
    expect(decisions.map((decision) => decision.allowed)).toEqual([true, true, false]);
  });

  test('refuses a policy conditioned on a key it cannot supply, rather than deciding without it', () => {
    const check = createIamCheck(
      policiesWith([{ Effect: 'Allow', Action: 'dynamodb:GetItem', Resource: TABLE, Condition: { 'ForAllValues:StringEquals': { 'dynamodb:Attributes': ['pk'] } } }]),
    );
    expect(() => check.forFunction('api')).toThrow(/dynamodb:attributes/);
  });

  test('an SDK client it is attached to never sends a denied call', async () => {
    const base = new DynamoDBClient({ region: 'eu-west-1', endpoint: 'http://127.0.0.1:9', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
    const sent = vi.fn();
    base.middlewareStack.add((next) => async (args) => (sent(), next(args)), { step: 'finalizeRequest' });
    checkCallsOf(base, 'DynamoDB', createIamCheck(policiesWith(onlyJobs)).forFunction('api'));
    const db = DynamoDBDocumentClient.from(base);
    await expect(db.send(new GetCommand({ TableName: 'jobs', Key: { pk: 'KEY#k1', sk: 'KEY' } }))).rejects.toBeInstanceOf(AccessDeniedException);
    expect(sent).not.toHaveBeenCalled();
    base.destroy();
  });
});

describe('the callback token parameter through the local Parameter Store', () => {
  const NAME = '/Jobs/Queue/callback-token-secret';
  const PARAMETER = `arn:aws:ssm:eu-west-1:000000000000:parameter${NAME}`;
  const readAndCreate = [
    { Effect: 'Allow', Action: 'ssm:GetParameter', Resource: PARAMETER },
    { Effect: 'Allow', Action: 'ssm:PutParameter', Resource: PARAMETER, Condition: { StringEquals: { 'ssm:Overwrite': 'false' } } },
  ];
  const clientOf = (statements: Record<string, unknown>[], value = 'cbs_local') =>
    checkCallsOf(createLocalParameterStore('eu-west-1', { name: NAME, value }).client(), 'SSM', createIamCheck(policiesWith(statements)).forFunction('api'));

  test('a read, of the latest version or another, is ssm:GetParameter on the parameter; a write says whether it overwrites', () => {
    expect(getParameterRequests(`${NAME}:2`, account)).toEqual([{ action: 'ssm:GetParameter', resource: PARAMETER, context: {} }]);
    expect(putParameterRequests(NAME, false, account)).toEqual([{ action: 'ssm:PutParameter', resource: PARAMETER, context: { 'ssm:Overwrite': 'false' } }]);
  });

  test('reads the value decrypted through a role that may read it', async () => {
    const secret = parameterStoreSecret(clientOf(readAndCreate), NAME);
    expect(await secret.versions()).toEqual({ current: 'cbs_local' });
  });

  test('refuses a role that may not read it, before the call is answered', async () => {
    const secret = parameterStoreSecret(clientOf([{ Effect: 'Allow', Action: 'ssm:GetParameter', Resource: `${PARAMETER}-other` }]), NAME);
    await expect(secret.versions()).rejects.toBeInstanceOf(AccessDeniedException);
  });

  test('lets a role that may only create it not overwrite it', async () => {
    const client = clientOf(readAndCreate);
    await expect(client.send(new PutParameterCommand({ Name: NAME, Value: 'x', Type: 'SecureString', Overwrite: true }))).rejects.toBeInstanceOf(AccessDeniedException);
    await expect(client.send(new PutParameterCommand({ Name: NAME, Value: 'x', Type: 'SecureString' }))).rejects.toBeInstanceOf(ParameterAlreadyExists);
  });
});
