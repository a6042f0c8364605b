import { App, Stack } from 'aws-cdk-lib';
import { DelayedJobQueue } from 'delayed-job-queue/cdk';

new DelayedJobQueue(new Stack(new App(), 'TeamJobs'), 'Queue', { handlers: './handlers.ts' });
