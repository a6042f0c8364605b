/**
 * Stack settings from CDK context that change what is deployed, and the
 * function timeouts the code is checked against, on stacks synthesized
 * without bundling (the functions' code plays no part here).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, describe, expect, test, vi } from 'vitest';
import { createQueueApp } from '../../../infra/queue-app.js';
import type { QueueStack } from '../../../infra/queue-stack.js';
import { ConfigError } from '../../../lib/domain/errors.js';
import { API_TIMEOUT_S, AUTHORIZER_TIMEOUT_S, WORKER_TIMEOUT_S } from '../../../lib/domain/limits.js';

// A synth takes about a second, several on a busy machine: more than the unit default of 5 s.
vi.setConfig({ testTimeout: 60_000 });

const outdirs: string[] = [];
afterAll(() => {
  for (const outdir of outdirs) rmSync(outdir, { recursive: true, force: true });
});

function synthStack(context: Record<string, string> = {}): QueueStack {
  const outdir = mkdtempSync(join(tmpdir(), 'queue-stack-settings-'));
  outdirs.push(outdir);
  return createQueueApp({ outdir, context: { ...context, 'aws:cdk:bundling-stacks': [] } }).stack;
}

/** Each function's properties in the template, by its name in the stack. */
function functionProperties(stack: QueueStack): Record<keyof QueueStack['functions'], Record<string, unknown>> {
  const resources = Template.fromStack(stack).toJSON().Resources as Record<string, { Properties: Record<string, unknown> }>;
  return Object.fromEntries(
    Object.entries(stack.functions).map(([name, fn]) => [name, resources[stack.getLogicalId(fn.function.node.defaultChild as never)]!.Properties]),
  ) as Record<keyof QueueStack['functions'], Record<string, unknown>>;
}

const reservedConcurrency = (stack: QueueStack) =>
  Object.fromEntries(Object.entries(functionProperties(stack)).map(([name, properties]) => [name, properties.ReservedConcurrentExecutions]));

describe('RESERVED_CONCURRENCY', () => {
  test('by default no function of the template reserves concurrency, so an account with a low Lambda quota can deploy', () => {
    const functions = Template.fromStack(synthStack({ POLLER_PARTITIONS: '2' })).findResources('AWS::Lambda::Function');
    expect(Object.keys(functions).length).toBeGreaterThanOrEqual(5);
    expect(Object.values(functions).filter((fn) => fn.Properties.ReservedConcurrentExecutions !== undefined)).toEqual([]);
  });

  test('true reserves 2 per poller partition, 2 for the sweeper and WORKER_RESERVED_CONCURRENCY (100) for the worker; the api and the authorizer none', () => {
    expect(reservedConcurrency(synthStack({ POLLER_PARTITIONS: '2', RESERVED_CONCURRENCY: 'true' }))).toEqual({
      api: undefined,
      authorizer: undefined,
      poller: 4,
      worker: 100,
      sweeper: 2,
    });
  });

  test("WORKER_RESERVED_CONCURRENCY sets the worker's", () => {
    expect(reservedConcurrency(synthStack({ RESERVED_CONCURRENCY: 'true', WORKER_RESERVED_CONCURRENCY: '20' }))).toMatchObject({ worker: 20 });
  });

  test('WORKER_RESERVED_CONCURRENCY without RESERVED_CONCURRENCY is refused rather than ignored: the worker would run uncapped', () => {
    expect(() => synthStack({ WORKER_RESERVED_CONCURRENCY: '20' })).toThrow(ConfigError);
    expect(() => synthStack({ WORKER_RESERVED_CONCURRENCY: '20' })).toThrow('context WORKER_RESERVED_CONCURRENCY applies only with RESERVED_CONCURRENCY=true');
  });

  test('any other value is a ConfigError naming the key and the value', () => {
    expect(() => synthStack({ RESERVED_CONCURRENCY: 'no' })).toThrow(ConfigError);
    expect(() => synthStack({ RESERVED_CONCURRENCY: 'no' })).toThrow('context RESERVED_CONCURRENCY must be true or false, got "no"');
  });
});

test('the api, authorizer and worker time out after the timeouts their code is checked against', () => {
  const { api, authorizer, worker } = functionProperties(synthStack());
  expect([api.Timeout, authorizer.Timeout, worker.Timeout]).toEqual([API_TIMEOUT_S, AUTHORIZER_TIMEOUT_S, WORKER_TIMEOUT_S]);
});
