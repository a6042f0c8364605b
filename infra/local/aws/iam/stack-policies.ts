/**
 * Each function's IAM policy exactly as the stack synthesizes it, read from
 * the construct tree with the same resolution `cdk synth` applies, and made
 * concrete for a table on this machine. The local runtime and the tests check
 * every AWS call against these, so a grant missing in `infra/` fails here
 * rather than after a deploy.
 *
 * The stack is built in memory with bundling skipped and never written out:
 * that takes about a second, where a full synthesis stages assets for several.
 */
import { CfnElement, CfnResource, type Stack } from 'aws-cdk-lib';
import { CfnPolicy, CfnRole } from 'aws-cdk-lib/aws-iam';
import { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { createQueueApp } from '../../../queue-app.js';
import { QUEUE_FUNCTIONS, type QueueFunctionName } from '../../../queue-function.js';
import type { QueueStack } from '../../../queue-stack.js';

export { QUEUE_FUNCTIONS, type QueueFunctionName };

export interface PolicyDocument {
  Version: string;
  Statement: Record<string, unknown>[];
}

/** The stack's policies with CloudFormation references left in, as plain JSON (a test run passes it between processes). */
export interface StackPolicies {
  functions: Record<QueueFunctionName, PolicyDocument>;
  /** The CloudFormation type of every resource the policies may refer to, by logical id. */
  resourceTypes: Record<string, string>;
  /** The names the stack gives its functions itself (policies name the poller and the sweeper by them), by logical id. */
  functionNames: Record<string, string>;
  /** Logical ids of the resources the local runtime stands in for. */
  logicalIds: { table: string; lifecycleBus: string; workerFunction: string; pollerFunction: string; sweeperFunction: string; wakeTimerQueue: string };
  /** The name of the callback token parameter, which the stack names but does not create (the worker does). */
  callbackTokenParameterName: string;
}

/** Context that makes CDK skip asset bundling for every stack, as `cdk synth --exclusively` does for the stacks it skips. */
const SKIP_BUNDLING = { 'aws:cdk:bundling-stacks': [] };

function logicalIdOf(stack: Stack, element: unknown): string {
  if (!(element instanceof CfnElement)) throw new Error('expected a CloudFormation element');
  return stack.getLogicalId(element);
}

function resolvedString(stack: Stack, value: string): string {
  const resolved: unknown = stack.resolve(value);
  if (typeof resolved !== 'string') throw new Error(`expected ${value} to resolve to a string at synth, got ${JSON.stringify(resolved)}`);
  return resolved;
}

function isRefTo(value: unknown, logicalId: string): boolean {
  return typeof value === 'object' && value !== null && (value as { Ref?: unknown }).Ref === logicalId;
}

/** Every statement attached to `role`: its inline policies and every AWS::IAM::Policy naming it. Managed policies cannot be checked here. */
function statementsOf(stack: Stack, role: CfnRole, policies: CfnPolicy[]): Record<string, unknown>[] {
  const roleId = stack.getLogicalId(role);
  if (stack.resolve(role.managedPolicyArns)?.length) {
    throw new Error(`role ${roleId} has managed policies; the local IAM check reads only the stack's own statements`);
  }
  const documents: unknown[] = (stack.resolve(role.policies) ?? []).map((policy: { policyDocument: unknown }) => policy.policyDocument);
  for (const policy of policies) {
    const roles: unknown[] = stack.resolve(policy.roles) ?? [];
    if (roles.some((ref) => isRefTo(ref, roleId))) documents.push(stack.resolve(policy.policyDocument));
  }
  return documents.flatMap((document) => {
    const statement = (document as { Statement?: unknown }).Statement;
    return (Array.isArray(statement) ? statement : [statement]) as Record<string, unknown>[];
  });
}

function readStackPoliciesOf(stack: QueueStack): StackPolicies {
  const constructs = stack.node.findAll();
  const policies = constructs.filter((construct): construct is CfnPolicy => construct instanceof CfnPolicy);
  const functions = {} as Record<QueueFunctionName, PolicyDocument>;
  for (const name of QUEUE_FUNCTIONS) {
    functions[name] = { Version: '2012-10-17', Statement: statementsOf(stack, stack.functions[name].role.node.defaultChild as CfnRole, policies) };
  }
  const resourceTypes: Record<string, string> = {};
  const functionNames: Record<string, string> = {};
  for (const construct of constructs) {
    if (construct instanceof CfnResource) resourceTypes[stack.getLogicalId(construct)] = construct.cfnResourceType;
    if (construct instanceof CfnFunction) {
      // An unnamed function's name is a token that resolves to nothing.
      const name: unknown = stack.resolve(construct.functionName);
      if (typeof name === 'string') functionNames[stack.getLogicalId(construct)] = name;
    }
  }
  return {
    functions,
    resourceTypes,
    functionNames,
    logicalIds: {
      table: logicalIdOf(stack, stack.table.node.defaultChild),
      lifecycleBus: logicalIdOf(stack, stack.eventBus.node.defaultChild),
      workerFunction: logicalIdOf(stack, stack.functions.worker.function.node.defaultChild),
      pollerFunction: logicalIdOf(stack, stack.functions.poller.function.node.defaultChild),
      sweeperFunction: logicalIdOf(stack, stack.functions.sweeper.function.node.defaultChild),
      wakeTimerQueue: logicalIdOf(stack, stack.queue.wakeTimerQueue.node.defaultChild),
    },
    callbackTokenParameterName: resolvedString(stack, stack.queue.callbackTokenParameter.name),
  };
}

/**
 * The policies of the stack `cdk deploy` would deploy with `context` (the
 * deployer's cdk.json context, so settings such as TARGET_FUNCTION_ARNS apply
 * here as they would there).
 */
export function readStackPolicies(context: Record<string, unknown> = {}): StackPolicies {
  const { stack } = createQueueApp({ context: { ...context, ...SKIP_BUNDLING } });
  return readStackPoliciesOf(stack);
}
