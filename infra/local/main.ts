/** `npm start`: runs the queue locally until Ctrl-C. */
import { log } from '../../functions/shared/log.js';
import { startLocalRuntime } from './runtime.js';

const runtime = await startLocalRuntime(process.env);
console.log(`
Delayed job queue running locally
  API:          ${runtime.url}
  Admin token:  ${runtime.adminToken}
  Table:        ${runtime.tableName} on ${runtime.dynamoEndpoint}

Try: curl -H "Authorization: Bearer ${runtime.adminToken}" ${runtime.url}/v1/job-types
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
