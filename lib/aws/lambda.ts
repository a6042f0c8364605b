/** Lambda: how the poller hands batches to workers in AWS, how writers wake the poller and the sweeper, and how a `lambda` target invokes its function. */
import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import { type WorkerInvoker, type WorkerBatch, wakeEventOf, type WakeInvoker, type WakeRequest } from '../domain/invocations.js';

export type { LambdaClient };

/** An asynchronous invoke: Lambda queues the batch for the worker function and answers 202. */
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

/** The functions a wake starts, by name. */
export interface WakeTargets {
  pollerFunctionName: string;
  sweeperFunctionName: string;
}

/**
 * A wake is an asynchronous invoke, as the minute tick's is: Lambda queues the event (and retries it while the
 * function is throttled) and answers 202, so the writer never waits for the woken function to run.
 */
export function createLambdaWaker(client: LambdaClient, targets: WakeTargets): WakeInvoker {
  return {
    async wake(request: WakeRequest): Promise<void> {
      const functionName = request.role === 'poller' ? targets.pollerFunctionName : targets.sweeperFunctionName;
      const { StatusCode, FunctionError } = await client.send(
        new InvokeCommand({ FunctionName: functionName, InvocationType: 'Event', Payload: Buffer.from(JSON.stringify(wakeEventOf(request))) }),
      );
      if (StatusCode !== 202 || FunctionError) {
        throw new Error(`${request.role} wake not accepted: status ${StatusCode ?? 'none'} ${FunctionError ?? ''}`.trim());
      }
    },
  };
}

/** What a synchronous invoke answered: the function's payload, and its error type when it failed. */
export interface InvokeResponse {
  payload: Uint8Array | undefined;
  functionError: string | undefined;
}

/** A synchronous invoke of `functionName` with `payload`; a refused call throws the SDK's error. */
export async function invokeFunction(client: LambdaClient, functionName: string, payload: unknown, signal: AbortSignal): Promise<InvokeResponse> {
  const response = await client.send(
    new InvokeCommand({ FunctionName: functionName, InvocationType: 'RequestResponse', Payload: Buffer.from(JSON.stringify(payload)) }),
    { abortSignal: signal },
  );
  return { payload: response.Payload, functionError: response.FunctionError };
}
