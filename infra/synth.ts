/**
 * `npm run synth`: synthesizes the stack into cdk.out and prints its template,
 * offline and without credentials or the CDK CLI. Context comes from where the
 * CLI would take it: cdk.json, cdk.context.json, then `-c KEY=VALUE` arguments.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../lib/domain/errors.js';
import { deployContext } from './cdk-context.js';
import { SETTINGS_RECORD_FILE } from './fixed-settings.js';
import { createQueueApp } from './queue-app.js';
import { REPO_ROOT } from './queue-function.js';

try {
  const { app, stack } = createQueueApp({
    outdir: join(REPO_ROOT, 'cdk.out'),
    context: deployContext(process.argv.slice(2)),
  }, join(REPO_ROOT, SETTINGS_RECORD_FILE));
  const assembly = app.synth();
  process.stdout.write(readFileSync(join(assembly.directory, stack.templateFile), 'utf8'));
} catch (error) {
  // A configuration mistake is the user's to fix: say what, without a stack trace into the CDK.
  if (!(error instanceof ConfigError)) throw error;
  console.error(error.message);
  process.exitCode = 1;
}
