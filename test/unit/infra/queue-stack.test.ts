/**
 * The CDK stack, synthesized as `cdk deploy` would: functions bundled by the
 * local esbuild (once for the file: bundling is the slow part) and cdk-nag's
 * AwsSolutions checks run. Variants of the configuration skip bundling.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { OPERATIONS } from '../../../functions/api/operations.js';
import { PUBLIC_PATHS } from '../../../functions/shared/public-paths.js';
import { authorizerOf } from '../../../infra/api-gateway.js';
import { createQueueApp } from '../../../infra/queue-app.js';
import { QUEUE_FUNCTIONS } from '../../../infra/queue-function.js';
import type { QueueStack } from '../../../infra/queue-stack.js';
import { TABLE_GRANTS } from '../../../infra/table-grants.js';
import { stackSettingsFrom } from '../../../infra/settings.js';
import { DUE_INDEX, PARTITION_PREFIX, TTL_ATTRIBUTE } from '../../../lib/store/keys.js';
import { TABLE_SCHEMA } from '../../../lib/store/table.js';

// A synth without bundling takes about a second, several on a busy machine: more than the unit default of 5 s.
vi.setConfig({ testTimeout: 60_000 });

const outdirs: string[] = [];
function synthApp(context: Record<string, unknown>, { bundle }: { bundle: boolean }) {
  const outdir = mkdtempSync(join(tmpdir(), 'queue-stack-'));
  outdirs.push(outdir);
  return createQueueApp({ outdir, context: { ...context, ...(bundle ? {} : { 'aws:cdk:bundling-stacks': [] }) } });
}

let stack: QueueStack;
let template: Template;

beforeAll(() => {
  const synthesized = synthApp({ POLLER_PARTITIONS: '2' }, { bundle: true });
  // Synthesizing the app runs the cdk-nag plugin: an unacknowledged finding throws here and fails every test.
  synthesized.app.synth();
  stack = synthesized.stack;
  template = Template.fromStack(stack);
}, 180_000);

afterAll(() => {
  for (const outdir of outdirs) rmSync(outdir, { recursive: true, force: true });
});

type Statement = { Action: string | string[]; Resource: unknown; Condition?: Record<string, Record<string, string[]>> };

function logicalIdOf(construct: { node: { defaultChild?: unknown } }): string {
  return stack.getLogicalId(construct.node.defaultChild as never);
}

/** Every action granted to a function's role, across all its policies. */
function statementsOf(name: keyof QueueStack['functions']): Statement[] {
  const roleId = logicalIdOf(stack.functions[name].role);
  const policies = template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } });
  return Object.values(policies).flatMap((policy) => policy.Properties.PolicyDocument.Statement as Statement[]);
}

function actionsOf(name: keyof QueueStack['functions']): string[] {
  return statementsOf(name)
    .flatMap((statement) => [statement.Action].flat())
    .sort();
}

const LOGS = ['logs:CreateLogStream', 'logs:PutLogEvents'];
/** What grantSendMessages gives a function that arms wake timers. */
const TIMER_SENDS = ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage'];

/** The poller's and the sweeper's ARNs as the policies write them: made of their names, never a reference to them. */
function wokenArns(): unknown[] {
  const arnOfName = (name: string | undefined) => ({
    'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':lambda:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, `:function:${name}`]],
  });
  return [arnOfName(stack.functions.poller.literalName?.name), arnOfName(stack.functions.sweeper.literalName?.name)];
}

describe('resources', () => {
  test('the stack holds one table, six functions, one API, one bus, a dead-letter queue and a timer queue and a schedule per poller partition plus the sweeper', () => {
    template.resourceCountIs('AWS::DynamoDB::Table', 1);
    template.resourceCountIs('AWS::Lambda::Function', 6);
    template.resourceCountIs('AWS::ApiGatewayV2::Api', 1);
    template.resourceCountIs('AWS::Events::EventBus', 1);
    template.resourceCountIs('AWS::SQS::Queue', 2);
    template.resourceCountIs('AWS::Events::Rule', 3);
    template.resourceCountIs('AWS::CloudWatch::Alarm', 3);
  });

  test("the dead-letter queue takes messages of 1 MiB, set rather than left to SQS's default, so a failed batch's record fits", () => {
    template.hasResourceProperties('AWS::SQS::Queue', { MaximumMessageSize: 1_048_576 });
  });

  test('outputs name the API URL, the table, the event bus, the dead-letter queue and the callback token secret', () => {
    for (const output of ['ApiUrl', 'TableName', 'EventBusName', 'DeadLetterQueueUrl', 'CallbackTokenParameterName']) {
      template.hasOutput(output, {});
    }
  });
});

describe('table', () => {
  test("its keys, due index and TTL attribute are the code's own names", () => {
    const { partitionKey, sortKey, dueIndex } = TABLE_SCHEMA;
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [
        { AttributeName: partitionKey, KeyType: 'HASH' },
        { AttributeName: sortKey, KeyType: 'RANGE' },
      ],
      GlobalSecondaryIndexes: [
        {
          IndexName: DUE_INDEX,
          KeySchema: [
            { AttributeName: dueIndex.partitionKey, KeyType: 'HASH' },
            { AttributeName: dueIndex.sortKey, KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: ['priority', 'weight', 'throttleKey', 'status', 'type'] },
        },
      ],
      TimeToLiveSpecification: { AttributeName: TTL_ATTRIBUTE, Enabled: true },
    });
  });

  test('it is on demand, with point-in-time recovery and deletion protection by default', () => {
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      DeletionProtectionEnabled: true,
    });
    template.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Retain' });
  });

  test('DELETION_PROTECTION=false lets cdk destroy delete the table', () => {
    const variant = Template.fromStack(synthApp({ DELETION_PROTECTION: 'false' }, { bundle: false }).stack);
    variant.hasResourceProperties('AWS::DynamoDB::Table', { DeletionProtectionEnabled: false });
    variant.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Delete' });
  });
});

/** A function's DynamoDB grants as the template has them: each item call with the families its condition allows, and due-index queries. */
function tableGrantsOf(name: keyof QueueStack['functions']): { items: Record<string, string[]>; queriesDueIndex: boolean } {
  const tableArn = { 'Fn::GetAtt': [logicalIdOf(stack.table), 'Arn'] };
  const indexArn = { 'Fn::Join': ['', [tableArn, `/index/${DUE_INDEX}`]] };
  const streamArn = { 'Fn::GetAtt': [logicalIdOf(stack.table), 'StreamArn'] };
  const familyOf = Object.fromEntries(Object.entries(PARTITION_PREFIX).map(([family, prefix]) => [`${prefix}*`, family]));
  const grants = { items: {} as Record<string, string[]>, queriesDueIndex: false };
  for (const statement of statementsOf(name)) {
    const actions = [statement.Action].flat().filter((action) => action.startsWith('dynamodb:'));
    if (actions.length === 0) continue;
    // The stream is the waker's, read by its event source mapping (see 'the waker reads the table's stream').
    if (JSON.stringify(statement.Resource) === JSON.stringify(streamArn)) continue;
    if (JSON.stringify(statement.Resource) === JSON.stringify(indexArn)) {
      expect(actions).toEqual(['dynamodb:Query']);
      grants.queriesDueIndex = true;
      continue;
    }
    expect(statement.Resource).toEqual(tableArn);
    const patterns: string[] = statement.Condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys'] ?? [];
    for (const action of actions) grants.items[action.slice('dynamodb:'.length)] = patterns.map((pattern) => familyOf[pattern] ?? pattern);
  }
  return grants;
}

describe('least privilege', () => {
  test.each(QUEUE_FUNCTIONS)('the %s may make exactly the table calls infra/table-grants.ts lists, each on its partition families only', (name) => {
    expect(tableGrantsOf(name)).toEqual({ items: TABLE_GRANTS[name].items, queriesDueIndex: TABLE_GRANTS[name].queriesDueIndex });
  });

  test('every statement on the table names the partitions it covers, so no grant reaches every item', () => {
    for (const name of QUEUE_FUNCTIONS) {
      for (const [call, families] of Object.entries(tableGrantsOf(name).items)) expect(families, `${name} ${call}`).not.toEqual([]);
    }
  });

  test("the api may query the bucket directory, the metrics history, a correlation key's pointers and a tag's entries, the base table partitions stats, the dashboard, the correlation callback and a listing by tag read", () => {
    expect(tableGrantsOf('api').items.Query).toEqual(['directory', 'metrics', 'correlation', 'tag']);
  });

  test('the worker may put bucket directory entries and no other item', () => {
    expect(tableGrantsOf('worker').items.PutItem).toEqual(['directory']);
  });

  test("the sweeper may also put jobs and their tag entries: a bulk retry's replays", () => {
    expect(tableGrantsOf('sweeper').items.PutItem).toEqual(['directory', 'job', 'tag']);
  });

  test('the poller may also put the jobs of schedules it fires, with their tag entries, and the schedules it moves on', () => {
    expect(tableGrantsOf('poller').items.PutItem).toEqual(['directory', 'job', 'schedule', 'tag']);
  });

  test('the authorizer reads keys and records their last use, nothing more', () => {
    expect(tableGrantsOf('authorizer')).toEqual({ items: { GetItem: ['apiKey'], UpdateItem: ['apiKey'] }, queriesDueIndex: false });
  });

  test('the api deletes correlation pointers and schedules, nothing else', () => {
    expect(tableGrantsOf('api').items.DeleteItem).toEqual(['correlation', 'schedule']);
  });

  test('the poller may also invoke the worker, wake the poller and the sweeper, arm wake timers and publish lifecycle events', () => {
    expect(actionsOf('poller').filter((action) => !action.startsWith('dynamodb:'))).toEqual(
      ['events:PutEvents', 'lambda:InvokeFunction', 'lambda:InvokeFunction', ...TIMER_SENDS, ...LOGS].sort(),
    );
    const invoked = statementsOf('poller').filter((statement) => statement.Action === 'lambda:InvokeFunction').map((statement) => statement.Resource);
    expect(invoked).toEqual([{ 'Fn::GetAtt': [logicalIdOf(stack.functions.worker.function), 'Arn'] }, wokenArns()]);
  });

  test('the worker may also read and create the callback token parameter, publish lifecycle events and send to its dead-letter queue, and wakes no one: the waker does', () => {
    expect(actionsOf('worker').filter((action) => !action.startsWith('dynamodb:'))).toEqual(
      ['events:PutEvents', 'ssm:GetParameter', 'ssm:PutParameter', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage', ...LOGS].sort(),
    );
  });

  test('the api may also publish lifecycle events, and wakes no one: the waker does; the sweeper may also wake the poller and the sweeper and arm wake timers, the authorizer read the callback token secret', () => {
    expect(actionsOf('api').filter((action) => !action.startsWith('dynamodb:'))).toEqual(['events:PutEvents', ...LOGS].sort());
    expect(actionsOf('sweeper').filter((action) => !action.startsWith('dynamodb:'))).toEqual(['events:PutEvents', 'lambda:InvokeFunction', ...TIMER_SENDS, ...LOGS].sort());
    expect(actionsOf('authorizer').filter((action) => !action.startsWith('dynamodb:'))).toEqual(['ssm:GetParameter', ...LOGS].sort());
  });

  test('the callback token parameter is read by its ARN, no other, and only created, never overwritten, by the worker; no KMS grant: the AWS managed key aws/ssm serves the account', () => {
    const parameterArn = stack.resolve(stack.queue.callbackTokenParameter.arn);
    expect(JSON.stringify(parameterArn)).toContain(`:parameter/delayed-job-queue/${stack.stackName}/${stack.queue.node.id}/callback-token-secret`);
    for (const name of ['worker', 'authorizer'] as const) {
      const reads = statementsOf(name).filter((statement) => statement.Action === 'ssm:GetParameter');
      expect(reads.map((statement) => statement.Resource)).toEqual([parameterArn]);
      expect(actionsOf(name).filter((action) => action.startsWith('kms:') || action.startsWith('secretsmanager:'))).toEqual([]);
    }
    const puts = statementsOf('worker').filter((statement) => statement.Action === 'ssm:PutParameter');
    expect(puts).toEqual([expect.objectContaining({ Resource: parameterArn, Condition: { StringEquals: { 'ssm:Overwrite': 'false' } } })]);
    expect(template.findResources('AWS::SecretsManager::Secret')).toEqual({});
  });

  test('the worker may invoke and send to exactly the target functions and buses given in context', () => {
    const fn = 'arn:aws:lambda:eu-west-1:123456789012:function:resize';
    const bus = 'arn:aws:events:eu-west-1:123456789012:event-bus/orders';
    const variant = synthApp({ TARGET_FUNCTION_ARNS: fn, TARGET_EVENT_BUS_ARNS: bus }, { bundle: false }).stack;
    const statements = Object.values(Template.fromStack(variant).findResources('AWS::IAM::Policy'))
      .filter((policy) => policy.Properties.Roles[0].Ref === variant.getLogicalId(variant.functions.worker.role.node.defaultChild as never))
      .flatMap((policy) => policy.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[]);
    expect(statements.find((statement) => statement.Action === 'lambda:InvokeFunction')?.Resource).toEqual(fn);
    expect(statements.find((statement) => statement.Action === 'events:PutEvents')?.Resource).toEqual([
      { 'Fn::GetAtt': [variant.getLogicalId(variant.eventBus.node.defaultChild as never), 'Arn'] },
      bus,
    ]);
  });

  test('no function may scan, use a DynamoDB wildcard, or act on every resource', () => {
    for (const name of QUEUE_FUNCTIONS) {
      expect(actionsOf(name)).not.toContain('dynamodb:Scan');
      expect(actionsOf(name).filter((action) => action.includes('*'))).toEqual([]);
      expect(statementsOf(name).map((statement) => statement.Resource)).not.toContain('*');
    }
  });
});

describe('functions', () => {
  test('every function runs Node.js 22 on ARM64 with source maps, an ES module bundle and the table name; only the poller and the sweeper have names of their own', () => {
    for (const [name, fn] of Object.entries(stack.functions)) {
      template.hasResourceProperties('AWS::Lambda::Function', {
        FunctionName: name === 'poller' || name === 'sweeper' ? fn.literalName?.name : Match.absent(),
        Handler: 'index.handler',
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        Role: { 'Fn::GetAtt': [logicalIdOf(fn.role), 'Arn'] },
        LoggingConfig: { LogGroup: { Ref: logicalIdOf(fn.logGroup) } },
        Environment: {
          Variables: Match.objectLike({
            TABLE_NAME: { Ref: logicalIdOf(stack.table) },
            NODE_OPTIONS: '--enable-source-maps',
            POWERTOOLS_METRICS_NAMESPACE: stack.stackName,
          }),
        },
      });
    }
  });

  test('each function logs to its own log group with a retention', () => {
    template.resourcePropertiesCountIs('AWS::Logs::LogGroup', { RetentionInDays: 30 }, 7);
  });

  test('the poller is told the worker, every function the event bus, and the worker and authorizer where the callback secret is', () => {
    const env = (name: keyof QueueStack['functions']) =>
      template.findResources('AWS::Lambda::Function', { Properties: { Role: { 'Fn::GetAtt': [logicalIdOf(stack.functions[name].role), 'Arn'] } } });
    const variables = (name: keyof QueueStack['functions']) => Object.values(env(name))[0]?.Properties.Environment.Variables;
    expect(variables('poller').WORKER_FUNCTION_NAME).toEqual({ Ref: logicalIdOf(stack.functions.worker.function) });
    expect(variables('worker').EVENT_BUS_NAME).toEqual({ Ref: logicalIdOf(stack.eventBus) });
    expect(variables('api').EVENT_BUS_NAME).toEqual({ Ref: logicalIdOf(stack.eventBus) });
    expect(variables('api').API_TOKEN).toBeUndefined();
    expect(variables('authorizer').API_TOKEN).toBeUndefined();
    expect(variables('sweeper').EVENT_BUS_NAME).toEqual({ Ref: logicalIdOf(stack.eventBus) });
    const parameterName = stack.queue.callbackTokenParameter.name;
    expect(variables('worker').CALLBACK_TOKEN_PARAMETER).toEqual(parameterName);
    expect(variables('authorizer').CALLBACK_TOKEN_PARAMETER).toEqual(parameterName);
    expect(variables('api').CALLBACK_TOKEN_PARAMETER).toBeUndefined();
    expect(variables('worker').PUBLIC_API_URL).toBeDefined();
  });

  test('the worker and the api are told whether http targets may reach private addresses: allowed unless the context refuses them', () => {
    const variables = (subject: Template, subjectStack: QueueStack, name: 'worker' | 'api') =>
      Object.values(
        subject.findResources('AWS::Lambda::Function', { Properties: { Role: { 'Fn::GetAtt': [logicalIdOf(subjectStack.functions[name].role), 'Arn'] } } }),
      )[0]?.Properties.Environment.Variables;
    expect(variables(template, stack, 'worker').HTTP_TARGET_PRIVATE_ADDRESSES).toBe('allow');
    expect(variables(template, stack, 'api').HTTP_TARGET_PRIVATE_ADDRESSES).toBe('allow');
    const refusing = synthApp({ HTTP_TARGET_PRIVATE_ADDRESSES: 'refuse' }, { bundle: false }).stack;
    const refusingTemplate = Template.fromStack(refusing);
    expect(variables(refusingTemplate, refusing, 'worker').HTTP_TARGET_PRIVATE_ADDRESSES).toBe('refuse');
    expect(variables(refusingTemplate, refusing, 'api').HTTP_TARGET_PRIVATE_ADDRESSES).toBe('refuse');
    expect(() => stackSettingsFrom((key) => (key === 'HTTP_TARGET_PRIVATE_ADDRESSES' ? 'deny' : undefined))).toThrow(
      'context HTTP_TARGET_PRIVATE_ADDRESSES must be one of allow, refuse, got "deny"',
    );
  });
});

describe('the waker', () => {
  const mappingOf = (source: unknown) =>
    Object.values(template.findResources('AWS::Lambda::EventSourceMapping')).find((mapping) => JSON.stringify(mapping.Properties.EventSourceArn) === JSON.stringify(source))?.Properties;

  test("reads the table's stream from its latest record, handed only lane entries, schedules, bulk operations and job types put or changed, and drops a batch a minute old", () => {
    const mapping = mappingOf({ 'Fn::GetAtt': [logicalIdOf(stack.table), 'StreamArn'] });
    expect(mapping).toMatchObject({ StartingPosition: 'LATEST', BisectBatchOnFunctionError: true, MaximumRetryAttempts: 5, MaximumRecordAgeInSeconds: 60 });
    const patterns = (mapping.FilterCriteria.Filters as { Pattern: string }[]).map((filter) => JSON.parse(filter.Pattern));
    expect(patterns).toEqual([{ eventName: ['INSERT', 'MODIFY'], dynamodb: { NewImage: { gsi1pk: { S: [{ prefix: 'Q#' }, { prefix: 'C#' }, 'SCHEDULES', 'OPS', 'TYPES'] } } } }]);
  });

  test('reads its timers from a queue of its own, which only it, the poller and the sweeper may send to', () => {
    const queueArn = { 'Fn::GetAtt': [logicalIdOf(stack.queue.wakeTimerQueue), 'Arn'] };
    expect(mappingOf(queueArn)).toMatchObject({ BatchSize: 10 });
    const senders = QUEUE_FUNCTIONS.filter((name) => statementsOf(name).some((statement) => [statement.Action].flat().includes('sqs:SendMessage') && JSON.stringify(statement.Resource) === JSON.stringify(queueArn)));
    expect(senders.sort()).toEqual(['poller', 'sweeper', 'waker']);
  });

  test("alone may read the table's stream, and that stream only", () => {
    const streamArn = { 'Fn::GetAtt': [logicalIdOf(stack.table), 'StreamArn'] };
    const readers = QUEUE_FUNCTIONS.filter((name) => actionsOf(name).includes('dynamodb:GetRecords'));
    expect(readers).toEqual(['waker']);
    const reads = statementsOf('waker').filter((statement) => [statement.Action].flat().includes('dynamodb:GetRecords'));
    expect(reads.map((statement) => statement.Resource)).toEqual([streamArn]);
  });
});

describe('waking the poller and the sweeper', () => {
  const WAKERS = ['poller', 'sweeper', 'waker'] as const;
  const variablesOf = (subject: Template, subjectStack: { getLogicalId: QueueStack['getLogicalId'] }, fn: { role: { node: { defaultChild?: unknown } } }) =>
    Object.values(subject.findResources('AWS::Lambda::Function', { Properties: { Role: { 'Fn::GetAtt': [subjectStack.getLogicalId(fn.role.node.defaultChild as never), 'Arn'] } } }))[0]
      ?.Properties.Environment.Variables;

  test('the poller and the sweeper are named after the stack and their path, within the 64 characters Lambda allows', () => {
    expect(stack.functions.poller.literalName?.name).toMatch(/^DelayedJobQueue-Poller-[0-9A-F]{8}$/);
    expect(stack.functions.sweeper.literalName?.name).toMatch(/^DelayedJobQueue-Sweeper-[0-9A-F]{8}$/);
    const longStack = synthApp({ STACK_NAME: `Jobs${'x'.repeat(120)}` }, { bundle: false }).stack;
    expect(longStack.functions.poller.literalName?.name.length).toBeLessThanOrEqual(64);
    expect(longStack.functions.poller.literalName?.name).not.toEqual(longStack.functions.sweeper.literalName?.name);
  });

  test.each(WAKERS)('the %s is told the poller and the sweeper by name, as literal text rather than a reference', (name) => {
    expect(variablesOf(template, stack, stack.functions[name])).toMatchObject({
      POLLER_FUNCTION_NAME: stack.functions.poller.literalName?.name,
      SWEEPER_FUNCTION_NAME: stack.functions.sweeper.literalName?.name,
    });
  });

  test('the authorizer wakes nothing: it is told no names and may invoke no function', () => {
    const variables = variablesOf(template, stack, stack.functions.authorizer);
    expect(variables.POLLER_FUNCTION_NAME).toBeUndefined();
    expect(variables.SWEEPER_FUNCTION_NAME).toBeUndefined();
    expect(actionsOf('authorizer')).not.toContain('lambda:InvokeFunction');
  });

  test.each(WAKERS)('the %s may invoke the poller and the sweeper, by the ARNs their names make', (name) => {
    const invoked = statementsOf(name).filter((statement) => statement.Action === 'lambda:InvokeFunction').map((statement) => statement.Resource);
    expect(invoked).toContainEqual(wokenArns());
  });

  test('every function is told POLLER_PARTITIONS, given or not, the number of poller schedule rules', () => {
    const variables = (subject: Template) => Object.values(subject.findResources('AWS::Lambda::Function')).map((fn) => fn.Properties.Environment.Variables.POLLER_PARTITIONS);
    expect(variables(template)).toEqual(['2', '2', '2', '2', '2', '2']);
    expect(variables(Template.fromStack(synthApp({}, { bundle: false }).stack))).toEqual(['1', '1', '1', '1', '1', '1']);
  });

  test('no resource depends on itself through references, which CloudFormation would refuse as a circular dependency', () => {
    // Template.fromStack follows every reference and DependsOn, and throws naming the resources of a cycle.
    expect(() => Template.fromStack(synthApp({ POLLER_PARTITIONS: '2' }, { bundle: false }).stack)).not.toThrow();
  });
});

describe('API', () => {
  test('every route but GET /health and the dashboard goes through the API key authorizer, with simple responses and a cache of at most a minute', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
      AuthorizerType: 'REQUEST',
      AuthorizerPayloadFormatVersion: '2.0',
      EnableSimpleResponses: true,
      IdentitySource: ['$request.header.Authorization'],
      AuthorizerResultTtlInSeconds: 30,
    });
    template.hasResourceProperties('AWS::ApiGatewayV2::Route', { RouteKey: '$default', AuthorizationType: 'CUSTOM' });
    template.hasResourceProperties('AWS::ApiGatewayV2::Route', { RouteKey: 'GET /health', AuthorizationType: 'NONE' });
  });

  test('the public paths the local gateway serves without a key (health, the API description, the dashboard) are the public GET routes, and no other route is', () => {
    const publicRoutes = Object.values(template.findResources('AWS::ApiGatewayV2::Route'))
      .filter((route) => route.Properties.AuthorizationType === 'NONE')
      .map((route) => route.Properties.RouteKey);
    expect(publicRoutes.sort()).toEqual([...PUBLIC_PATHS].map((path) => `GET ${path}`).sort());
  });

  test('GET /v1/stats has no route of its own: the $default route serves it through the API key authorizer', () => {
    const routeKeys = Object.values(template.findResources('AWS::ApiGatewayV2::Route')).map((route) => route.Properties.RouteKey);
    expect(routeKeys).not.toContainEqual(expect.stringContaining('/v1/stats'));
    template.hasResourceProperties('AWS::ApiGatewayV2::Route', { RouteKey: '$default', AuthorizationType: 'CUSTOM' });
  });

  test('status callbacks and heartbeats run the authorizer uncached and without a required header, so callback tokens reach it', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', { AuthorizerResultTtlInSeconds: 0, EnableSimpleResponses: true, IdentitySource: [] });
    for (const routeKey of ['POST /v1/jobs/{type}/{id}', 'POST /v1/jobs/{type}/{id}/heartbeat']) {
      template.hasResourceProperties('AWS::ApiGatewayV2::Route', { RouteKey: routeKey, AuthorizationType: 'CUSTOM' });
    }
  });

  test('batch enqueue, bulk operations, correlation callbacks and /jobber/queue have routes of their own behind the cached key authorizer', () => {
    const keyAuthorizers = template.findResources('AWS::ApiGatewayV2::Authorizer', { Properties: { AuthorizerResultTtlInSeconds: 30 } });
    const [keyAuthorizerId] = Object.keys(keyAuthorizers);
    for (const routeKey of ['POST /v1/jobs/{type}/batch', 'POST /v1/jobs/{type}/bulk', 'POST /v1/callbacks/{correlation_key}', 'POST /jobber/queue']) {
      template.hasResourceProperties('AWS::ApiGatewayV2::Route', { RouteKey: routeKey, AuthorizationType: 'CUSTOM', AuthorizerId: { Ref: keyAuthorizerId } });
    }
  });
});

test('only the callback operations take the callback route: every other keyed operation is behind the key authorizer', () => {
  const keyed = OPERATIONS.filter((operation) => operation.access.kind !== 'public' && operation.access.kind !== 'callback');
  const onCallbackRoute = keyed.filter((operation) => authorizerOf(operation.method, operation.path) !== 'key');
  expect(onCallbackRoute.map((operation) => `${operation.method} ${operation.path}`)).toEqual([]);
});

describe('poller partitions', () => {
  const pollerRules = (subject: Template, poller: string) =>
    Object.values(subject.findResources('AWS::Events::Rule'))
      .map((rule) => rule.Properties)
      .filter((rule) => rule.Targets[0].Arn['Fn::GetAtt'][0] === poller);

  test('each partition has its own every-minute rule, and the rules split the shards between them', () => {
    const rules = pollerRules(template, logicalIdOf(stack.functions.poller.function));
    expect(rules.map((rule) => rule.ScheduleExpression)).toEqual(['rate(1 minute)', 'rate(1 minute)']);
    expect(rules.map((rule) => JSON.parse(rule.Targets[0].Input))).toEqual([{ shards: [0, 2] }, { shards: [1, 3] }]);
  });

  test('POLLER_PARTITIONS and SHARDS from context give one rule per partition over every shard exactly once', () => {
    const variant = synthApp({ SHARDS: '8', POLLER_PARTITIONS: '3' }, { bundle: false }).stack;
    const rules = pollerRules(Template.fromStack(variant), variant.getLogicalId(variant.functions.poller.function.node.defaultChild as never));
    expect(rules.map((rule) => JSON.parse(rule.Targets[0].Input).shards)).toEqual([
      [0, 3, 6],
      [1, 4, 7],
      [2, 5],
    ]);
  });

  test('Lambda never retries the poller, nor keeps its event past the next start', () => {
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: logicalIdOf(stack.functions.poller.function) },
      MaximumRetryAttempts: 0,
      MaximumEventAgeInSeconds: 60,
    });
  });

  test('the sweeper runs every minute', () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [logicalIdOf(stack.functions.sweeper.function), 'Arn'] } })],
    });
  });
});

describe('worker delivery', () => {
  test('Lambda never retries a worker batch and sends a failed one to the dead-letter queue', () => {
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: logicalIdOf(stack.functions.worker.function) },
      MaximumRetryAttempts: 0,
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [logicalIdOf(stack.deadLetterQueue), 'Arn'] } } },
    });
  });
});

describe('API', () => {
  test('the default stage throttles and writes access logs', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 },
      AccessLogSettings: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('\\$context.requestId') },
    });
  });

  test('health has its own route and every other request reaches the api function too', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Route', { RouteKey: 'GET /health' });
    template.hasResourceProperties('AWS::ApiGatewayV2::Route', { RouteKey: '$default' });
    const targets = Object.values(template.findResources('AWS::ApiGatewayV2::Route')).map((route) => route.Properties.Target);
    expect(new Set(targets.map((target) => JSON.stringify(target))).size).toBe(1);
  });
});

describe('alarms', () => {
  const workerDimensions = () => [{ Name: 'FunctionName', Value: { Ref: logicalIdOf(stack.functions.worker.function) } }];
  /** Each metric a metric-math alarm reads, by its id in the expression. */
  const metricsRead = (alarm: { [key: string]: any }): Record<string, unknown> => {
    const queries: { Id: string; MetricStat?: unknown }[] = alarm.Properties.Metrics ?? [];
    return Object.fromEntries(queries.filter((query) => query.MetricStat).map((query) => [query.Id, query.MetricStat]));
  };
  const alarmReading = (id: string) => Object.values(template.findResources('AWS::CloudWatch::Alarm')).find((alarm) => metricsRead(alarm)[id] !== undefined)!;

  test('three alarms, one per concern, read eight metrics, what CloudWatch bills them by', () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm'));
    const metrics = alarms.reduce((total, alarm) => total + (alarm.Properties.MetricName ? 1 : Object.keys(metricsRead(alarm)).length), 0);
    expect({ alarms: alarms.length, metrics }).toEqual({ alarms: 3, metrics: 8 });
  });

  test('the due lag has an alarm of its own, which takes a minute without the lag reported for a breach: a poller that stopped, or whose runs die before they report', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: stack.stackName,
      MetricName: 'OldestDueLagMs',
      Dimensions: [{ Name: 'service', Value: 'poller' }],
      Threshold: 120_000,
      TreatMissingData: 'breaching',
    });
  });

  test("the worker's alarm adds its errors, its throttles, and 1 for a minute a batch waited over WORKER_EVENT_AGE_ALARM_MS, any in five minutes", () => {
    const alarm = alarmReading('errors');
    expect(metricsRead(alarm)).toEqual({
      errors: { Metric: { Namespace: 'AWS/Lambda', MetricName: 'Errors', Dimensions: workerDimensions() }, Period: 60, Stat: 'Sum' },
      throttles: { Metric: { Namespace: 'AWS/Lambda', MetricName: 'Throttles', Dimensions: workerDimensions() }, Period: 60, Stat: 'Sum' },
      late: { Metric: { Namespace: 'AWS/Lambda', MetricName: 'AsyncEventAge', Dimensions: workerDimensions() }, Period: 60, Stat: 'Maximum' },
    });
    const expression = alarm.Properties.Metrics.find((query: { ReturnData?: boolean; Expression?: string }) => query.Expression)?.Expression;
    expect(expression).toBe('FILL(errors, 0) + FILL(throttles, 0) + IF(FILL(late, 0) > 30000, 1, 0)');
    expect(alarm.Properties).toMatchObject({ Threshold: 0, ComparisonOperator: 'GreaterThanThreshold', EvaluationPeriods: 5, DatapointsToAlarm: 1, TreatMissingData: 'notBreaching' });
  });

  test("DynamoDB's throttle events on the table and on its index, reads and writes, are added up in one alarm", () => {
    const alarm = alarmReading('tableWrites');
    expect(Object.keys(metricsRead(alarm)).sort()).toEqual(['indexReads', 'indexWrites', 'tableReads', 'tableWrites']);
  });

  test('no alarm reads the dead-letter queue or Lambda\'s destination failures: every batch there is a failed invocation or an event that waited past its claims', () => {
    const read = JSON.stringify(template.findResources('AWS::CloudWatch::Alarm'));
    expect(read).not.toContain('ApproximateNumberOfMessagesVisible');
    expect(read).not.toContain('DestinationDeliveryFailures');
  });
});

describe('worker throttles and late batches', () => {
  test('a worker reserved concurrency that is not a positive integer is refused, naming the context key', () => {
    expect(() => synthApp({ WORKER_RESERVED_CONCURRENCY: '0' }, { bundle: false })).toThrow(/WORKER_RESERVED_CONCURRENCY must be an integer from 1 to 100000, got "0"/);
  });
});

describe('configuration', () => {
  test('more partitions than shards is refused, naming the context key', () => {
    expect(() => synthApp({ SHARDS: '2', POLLER_PARTITIONS: '3' }, { bundle: false })).toThrow(/POLLER_PARTITIONS must be at most SHARDS \(2\).*got "3"/);
  });

  test('a queue setting is validated by the code the functions run', () => {
    expect(() => synthApp({ SHARDS: '0' }, { bundle: false })).toThrow(/SHARDS must be an integer from 1 to 256, got "0"/);
  });

  test('a poller run longer than the schedule is refused', () => {
    expect(() => synthApp({ POLLER_RUN_MS: '90000' }, { bundle: false })).toThrow(/POLLER_RUN_MS must be at most 60000/);
  });

  test('queue settings given in context reach every function, the others keep the code defaults', () => {
    const variant = Template.fromStack(synthApp({ BUCKET_MS: '30000' }, { bundle: false }).stack);
    const variables = Object.values(variant.findResources('AWS::Lambda::Function')).map((fn) => fn.Properties.Environment.Variables);
    expect(variables).toHaveLength(6);
    expect(variables.map((env) => env.BUCKET_MS)).toEqual(variables.map(() => '30000'));
    expect(variables.map((env) => env.SHARDS)).toEqual(variables.map(() => undefined));
  });

  test('deployed pollers loop for nearly the whole minute, within a timeout that lets the last poll finish', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Role: { 'Fn::GetAtt': [logicalIdOf(stack.functions.poller.role), 'Arn'] },
      Environment: { Variables: Match.objectLike({ POLLER_RUN_MS: '59000' }) },
      Timeout: 74,
    });
  });
});

describe('cdk-nag', () => {
  test('every acknowledged AwsSolutions finding says why', () => {
    const acknowledgments = stack.node
      .findAll()
      .flatMap((construct) => construct.node.metadata.filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY))
      .flatMap((entry) => Object.entries(entry.data as Record<string, string>));
    // Routes without an authorizer: /health, /openapi.json and the dashboard's page, script and styles.
    expect(acknowledgments.filter(([id]) => id === 'AwsSolutions::AwsSolutions-APIG4')).toHaveLength(PUBLIC_PATHS.size);
    for (const [, reason] of acknowledgments) expect(reason.length).toBeGreaterThan(40);
  });

  test('a finding without an acknowledgment fails the synth', () => {
    const { app, stack: variant } = synthApp({}, { bundle: false });
    variant.functions.worker.role.addToPolicy(new PolicyStatement({ actions: ['dynamodb:*'], resources: ['*'] }));
    expect(() => app.synth()).toThrow(/AwsSolutions-IAM5\[Action::dynamodb:\*\]/);
  });
});
