/**
 * This repository's own deployment: one stack holding a DelayedJobQueue with the built-in handlers, as any
 * app adding the construct would. Its construct id is `Default`, which CDK leaves out of logical ids, so the
 * resources keep the ids they had when the stack created them itself.
 */
import { Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { DelayedJobQueue, type DelayedJobQueueProps } from './delayed-job-queue.js';

export { functionTimeoutsS } from './delayed-job-queue.js';

export interface QueueStackProps extends StackProps {
  queue: DelayedJobQueueProps;
}

export class QueueStack extends Stack {
  readonly queue: DelayedJobQueue;
  readonly table: DelayedJobQueue['table'];
  readonly eventBus: DelayedJobQueue['eventBus'];
  readonly deadLetterQueue: DelayedJobQueue['deadLetterQueue'];
  readonly functions: DelayedJobQueue['functions'];
  readonly alarms: DelayedJobQueue['alarms'];

  constructor(scope: Construct, id: string, props: QueueStackProps) {
    super(scope, id, props);
    this.queue = new DelayedJobQueue(this, 'Default', props.queue);
    ({ table: this.table, eventBus: this.eventBus, deadLetterQueue: this.deadLetterQueue, functions: this.functions, alarms: this.alarms } = this.queue);
  }
}
