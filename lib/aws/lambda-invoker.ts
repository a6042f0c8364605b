/** How the poller hands batches to workers in AWS: an asynchronous Lambda invoke. */
import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import type { WorkerBatch, WorkerInvoker } from '../queue/poller.js';

export function createLambdaInvoker(client: LambdaClient, functionName: string): WorkerInvoker {
  return {
    async invoke(batch: WorkerBatch): Promise<void> {
      const { StatusCode, FunctionError } = await client.send(
        new InvokeCommand({
          FunctionName: functionName,
          InvocationType: 'Event',
          Payload: Buffer.from(JSON.stringify(batch)),
        }),
      );
      // An asynchronous invoke is queued by Lambda only when it answers 202.
      if (StatusCode !== 202 || FunctionError) {
        throw new Error(`worker invoke not accepted: status ${StatusCode ?? 'none'} ${FunctionError ?? ''}`.trim());
      }
    },
  };
}
