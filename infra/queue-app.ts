/** Builds the CDK app: the queue stack from context, with cdk-nag's AwsSolutions checks run at synth. */
import { App, Validations, type AppProps } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { QueueStack } from './queue-stack.js';
import { stackSettingsFrom } from './settings.js';

export const DEFAULT_STACK_NAME = 'DelayedJobQueue';

export function createQueueApp(props: AppProps = {}): { app: App; stack: QueueStack } {
  const app = new App(props);
  const read = (key: string): unknown => app.node.tryGetContext(key);
  const stackName = String(read('STACK_NAME') ?? DEFAULT_STACK_NAME);
  // Environment-agnostic: synth needs no account or credentials; `cdk deploy` targets the caller's account and region.
  const stack = new QueueStack(app, stackName, {
    settings: stackSettingsFrom(read),
    description: 'Delayed job queue: DynamoDB table, HTTP API, poller, worker, sweeper',
  });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { app, stack };
}
