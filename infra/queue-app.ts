/** Builds this repository's CDK app: the queue stack, its settings from context, with cdk-nag's AwsSolutions checks run at synth. */
import { App, Validations, type AppProps } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { DelayedJobQueueSettings } from './delayed-job-queue.js';
import { QueueStack } from './queue-stack.js';
import { settingNames } from './settings.js';

export const DEFAULT_STACK_NAME = 'DelayedJobQueue';

/** The settings given as context (`cdk deploy -c SHARDS=8`), under the names the construct takes them by. */
function settingsFromContext(app: App): DelayedJobQueueSettings {
  const settings: Record<string, unknown> = {};
  for (const name of settingNames()) {
    const value: unknown = app.node.tryGetContext(name);
    if (value !== undefined) settings[name] = value;
  }
  return settings as DelayedJobQueueSettings;
}

/**
 * `settingsRecord`: where the deployment's fixed settings are recorded and checked (the construct's
 * `settingsRecord`); nowhere by default, since tests and the local runtime's IAM check synthesize stacks of
 * every configuration. `npm run synth` and `cdk deploy` (app.ts) record them.
 */
export function createQueueApp(props: AppProps = {}, settingsRecord: string | false = false): { app: App; stack: QueueStack } {
  const app = new App(props);
  const stackName = String(app.node.tryGetContext('STACK_NAME') ?? DEFAULT_STACK_NAME);
  // Environment-agnostic: synth needs no account or credentials; `cdk deploy` targets the caller's account and region.
  const stack = new QueueStack(app, stackName, {
    queue: { settings: settingsFromContext(app), settingsRecord },
    description: 'Delayed job queue: DynamoDB table, HTTP API, poller, worker, sweeper',
  });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { app, stack };
}
