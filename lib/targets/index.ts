/**
 * Targets decide how a worker runs a job (docs/guides/targets.md): a handler in the
 * worker's code, an HTTP endpoint, a Lambda function, or an EventBridge bus.
 * Each takes its client by injection; the worker wraps every run with the
 * attempt's timeout and claim renewal and records the outcome.
 */
import type { EventBridgeClient } from '../aws/eventbridge.js';
import type { LambdaClient } from '../aws/lambda.js';
import type { SigningSecrets, TargetOutcome, TargetRun } from './target.js';
import type { JobTypeWithoutSecrets } from '../domain/job-type.js';
import type { AttemptFailure } from '../domain/retry.js';
import { ownEntry } from '../domain/own.js';
import { runEventBridgeTarget, type EventBridgeTargetOptions } from './eventbridge.js';
import { runHandlerTarget, type JobHandler } from './handler.js';
import { runHttpTarget, type HttpTargetDeps } from './http.js';
import { runLambdaTarget } from './lambda.js';

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
  /** Where http targets' signing secrets are read from: a batch never carries them. */
  signingSecrets: SigningSecrets;
}

/** Runs one attempt through a target that is ready on this worker. */
export type TargetRunner = (run: TargetRun) => Promise<TargetOutcome>;

export type PreparedTarget = { run: TargetRunner } | { failure: AttemptFailure };

const notRunnable = (errorClass: string, message: string): PreparedTarget => ({ failure: { error: { class: errorClass, message }, retryable: false } });

/**
 * Readies the type's target on this worker before the attempt starts: the kind's client must be here, and an
 * http target needs its type's signing secret. A failure means jobs of this type cannot run here at all, and
 * ends the attempt without retry. A secret that cannot be read throws, like any store error before an attempt:
 * the claim lapses and the sweeper takes the job back (an at_most_once job without counting an attempt).
 */
export async function prepareTarget(jobType: JobTypeWithoutSecrets, deps: TargetDeps): Promise<PreparedTarget> {
  const { target } = jobType;
  switch (target.kind) {
    case 'handler': {
      const handler = ownEntry(deps.handlers, target.name);
      if (handler === undefined) return notRunnable('UnknownHandlerError', `no handler named "${target.name}"`);
      return { run: (run) => runHandlerTarget(handler, run) };
    }
    case 'http': {
      const { http } = deps;
      if (!http) return notRunnable('TargetNotConfiguredError', 'http targets need PUBLIC_API_URL and CALLBACK_TOKEN_PARAMETER (or CALLBACK_TOKEN_SECRET) on the worker');
      // Only the secret is taken from the item; the rest of the type stays the one the job was claimed under
      // (its visibility timeout set the claim, its limits the slots held, its retry policy and windows decide
      // what follows), so an attempt never mixes two versions of the type. The secret is kept when the type is
      // replaced, so it belongs to no one version and mixes nothing.
      const signingSecret = await deps.signingSecrets.get(jobType.name);
      if (signingSecret === undefined) return notRunnable('TargetNotConfiguredError', `job type "${jobType.name}" has no signing secret`);
      return { run: (run) => runHttpTarget(run, target, signingSecret, http) };
    }
    case 'lambda': {
      const { lambda } = deps;
      if (!lambda) return notRunnable('TargetNotConfiguredError', 'this worker has no Lambda client');
      return { run: (run) => runLambdaTarget(run, target, lambda) };
    }
    case 'eventbridge': {
      const { eventBridge } = deps;
      if (!eventBridge) return notRunnable('TargetNotConfiguredError', 'this worker has no EventBridge client');
      return { run: (run) => runEventBridgeTarget(run, target, eventBridge, deps.eventBridgeOptions) };
    }
  }
}
