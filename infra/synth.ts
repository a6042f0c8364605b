/**
 * `npm run synth`: synthesizes the stack into cdk.out and prints its template,
 * offline and without credentials or the CDK CLI. Context comes from where the
 * CLI would take it: cdk.json, cdk.context.json, then `-c KEY=VALUE` arguments.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../lib/errors.js';
import { createQueueApp } from './queue-app.js';
import { REPO_ROOT } from './queue-function.js';

function contextFile(name: string): Record<string, unknown> {
  const path = join(REPO_ROOT, name);
  if (!existsSync(path)) return {};
  const parsed = JSON.parse(readFileSync(path, 'utf8')) as { context?: Record<string, unknown> } & Record<string, unknown>;
  return name === 'cdk.json' ? (parsed.context ?? {}) : parsed;
}

function contextArguments(args: string[]): Record<string, string> {
  const context: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const pair = arg === '-c' || arg === '--context' ? args[++i] : arg.startsWith('--context=') ? arg.slice('--context='.length) : undefined;
    const separator = pair?.indexOf('=') ?? -1;
    if (pair === undefined || separator < 1) throw new Error(`expected -c KEY=VALUE, got "${arg}${pair !== undefined && pair !== arg ? ` ${pair}` : ''}"`);
    context[pair.slice(0, separator)] = pair.slice(separator + 1);
  }
  return context;
}

try {
  const { app, stack } = createQueueApp({
    outdir: join(REPO_ROOT, 'cdk.out'),
    context: { ...contextFile('cdk.json'), ...contextFile('cdk.context.json'), ...contextArguments(process.argv.slice(2)) },
  });
  const assembly = app.synth();
  process.stdout.write(readFileSync(join(assembly.directory, stack.templateFile), 'utf8'));
} catch (error) {
  // A configuration mistake is the user's to fix: say what, without a stack trace into the CDK.
  if (!(error instanceof ConfigError)) throw error;
  console.error(error.message);
  process.exitCode = 1;
}
