/**
 * The `djq` command of the package. `djq dev --handlers <module>` runs what `npm start` runs, with the
 * handler module's handlers and retry policies in place of the built-in ones, and the same settings from
 * the environment (PORT, DATA_DIR, API_TOKEN, ...).
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { registryOf } from '../../functions/worker/handlers/index.js';
import { ConfigError } from '../../lib/domain/errors.js';

const USAGE = `usage: djq dev [--handlers <module>]

  dev   runs the queue on this machine (DynamoDB Local under DATA_DIR, the API on PORT),
        with the handlers and retry policies the module exports (the built-in ones without --handlers)`;

async function loadRegistry(modulePath: string) {
  const path = resolve(modulePath);
  if (!existsSync(path)) throw new ConfigError(`--handlers: no file ${path}`);
  return registryOf((await import(pathToFileURL(path).href)) as Record<string, unknown>);
}

async function main(args: string[]): Promise<void> {
  const { positionals, values } = parseArgs({ args, allowPositionals: true, options: { handlers: { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
  if (values.help) return void console.log(USAGE);
  if (positionals.length !== 1 || positionals[0] !== 'dev') {
    console.error(USAGE);
    process.exitCode = 2;
    return;
  }
  const options = values.handlers === undefined ? {} : { registry: await loadRegistry(values.handlers) };
  // Loaded only now: the whole runtime takes seconds to compile, which a mistyped command should not wait for.
  const { serveUntilStopped } = await import('./serve.js');
  await serveUntilStopped(process.env, options);
}

try {
  await main(process.argv.slice(2));
} catch (error) {
  // A wrong argument or handler module is the user's to fix: say what, without a stack trace into the runtime.
  if (!(error instanceof ConfigError) && !(error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS'))) throw error;
  console.error(`djq: ${error.message}\n\n${USAGE}`);
  process.exitCode = 2;
}
