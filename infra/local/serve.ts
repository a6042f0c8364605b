/** Runs the local runtime in the foreground, as `npm start` and `djq dev` do: says where it is, stops on Ctrl-C. */
import { log } from '../../functions/shared/log.js';
import type { Env } from '../../lib/queue/settings.js';
import { startLocalRuntime, type LocalRuntimeOptions } from './runtime.js';

export async function serveUntilStopped(env: Env, options: LocalRuntimeOptions = {}): Promise<void> {
  const runtime = await startLocalRuntime(env, options);
  const keyOrigin = runtime.adminKeyFile ? `scope admin, kept in ${runtime.adminKeyFile}` : 'API_TOKEN, as given';
  const handlerNames = Object.keys(options.registry?.handlers ?? {});
  console.log(`
Delayed job queue running locally
  Dashboard:    ${runtime.url}/   (open it and paste the admin key)
  API:          ${runtime.url}
  Admin key:    ${runtime.adminKey}
                (${keyOrigin})
  Table:        ${runtime.tableName} on ${runtime.dynamoEndpoint}${handlerNames.length > 0 ? `\n  Handlers:     ${handlerNames.join(', ')}` : ''}

Try: curl -H "Authorization: Bearer ${runtime.adminKey}" ${runtime.url}/v1/job-types
Scoped keys for producers and workers: POST /v1/keys (see docs/operations/keys-and-scopes.md).
Press Ctrl-C to stop.
`);

  let stopping = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      log('info', 'stopping: finishing jobs in flight');
      runtime
        .stop()
        .then(() => process.exit(0))
        .catch((error: unknown) => {
          log('error', 'stop failed', { error });
          process.exit(1);
        });
    });
  }
}
