/** The CDK context the CLI would deploy with: cdk.json's, then cdk.context.json's, then `-c KEY=VALUE` arguments. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './queue-function.js';
import { stackSettingsFrom, type StackSettings } from './settings.js';

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

export function deployContext(args: string[] = []): Record<string, unknown> {
  return { ...contextFile('cdk.json'), ...contextFile('cdk.context.json'), ...contextArguments(args) };
}

/** The stack's settings as `cdk deploy` would read them from `context`, so the local runtime emulates what it would deploy. */
export function deployStackSettings(context: Record<string, unknown> = deployContext()): StackSettings {
  const values = new Map(Object.entries(context));
  return stackSettingsFrom((key) => values.get(key));
}
