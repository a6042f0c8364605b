/**
 * Targets decide how a worker runs a job (DESIGN §6): a handler in the
 * worker's code, an HTTP endpoint, a Lambda function, or an EventBridge bus.
 * Each takes its client by injection; the worker wraps every run with the
 * attempt's timeout and claim renewal and records the outcome.
 */
import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import type { LambdaClient } from '@aws-sdk/client-lambda';
import type { JobType } from '../model.js';
import type { AttemptFailure } from '../retry.js';
import { runEventBridgeTarget, type EventBridgeTargetOptions } from './eventbridge.js';
import { runHandlerTarget, type JobHandler } from './handler.js';
import { runHttpTarget, type HttpTargetDeps } from './http.js';
import { runLambdaTarget } from './lambda.js';
import type { TargetOutcome, TargetRun } from './target.js';

export type { TargetOutcome, TargetRun } from './target.js';

/** The clients targets need; a kind whose client is absent fails its jobs, naming what is missing. */
export interface TargetClients {
  http?: HttpTargetDeps;
  lambda?: LambdaClient;
  eventBridge?: EventBridgeClient;
  eventBridgeOptions?: EventBridgeTargetOptions;
}

export interface TargetDeps extends TargetClients {
  handlers: Readonly<Record<string, JobHandler>>;
}

const notRunnable = (errorClass: string, message: string): AttemptFailure => ({ error: { class: errorClass, message }, retryable: false });

/** Why jobs of this type cannot run on this worker at all, found before the attempt starts; undefined when they can. */
export function targetConfigurationError(jobType: JobType, deps: TargetDeps): AttemptFailure | undefined {
  const { target } = jobType;
  switch (target.kind) {
    case 'handler':
      return target.name in deps.handlers ? undefined : notRunnable('UnknownHandlerError', `no handler named "${target.name}"`);
    case 'http':
      if (!deps.http) return notRunnable('TargetNotConfiguredError', 'http targets need PUBLIC_API_URL and CALLBACK_TOKEN_SECRET_ARN (or CALLBACK_TOKEN_SECRET) on the worker');
      if (jobType.signingSecret === undefined) return notRunnable('TargetNotConfiguredError', `job type "${jobType.name}" has no signing secret`);
      return undefined;
    case 'lambda':
      return deps.lambda ? undefined : notRunnable('TargetNotConfiguredError', 'this worker has no Lambda client');
    case 'eventbridge':
      return deps.eventBridge ? undefined : notRunnable('TargetNotConfiguredError', 'this worker has no EventBridge client');
  }
}

/** Runs one attempt through the type's target; a target this worker cannot run fails without retry. */
export async function runTarget(run: TargetRun, deps: TargetDeps): Promise<TargetOutcome> {
  const configurationError = targetConfigurationError(run.jobType, deps);
  if (configurationError) return { kind: 'failed', failure: configurationError };
  const { target } = run.jobType;
  switch (target.kind) {
    case 'handler':
      return runHandlerTarget(deps.handlers[target.name]!, run);
    case 'http':
      return runHttpTarget(run, target, run.jobType.signingSecret!, deps.http!);
    case 'lambda':
      return runLambdaTarget(run, target, deps.lambda!);
    case 'eventbridge':
      return runEventBridgeTarget(run, target, deps.eventBridge!, deps.eventBridgeOptions);
  }
}
