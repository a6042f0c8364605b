/**
 * Lambda's Invoke API, answering late: a local HTTP endpoint that queues each asynchronous invoke's event at once
 * (hands it to `invoked`, as Lambda starts the function) and sends its 202 only `hangMs` later, as an endpoint
 * whose answers hang. Callers reach it through the SDK's own Lambda client with the deployed call limits
 * (ASYNC_DELIVERY_CALL_LIMITS), so they give up as deployed callers do, and the SDK's retry of a try that timed
 * out reaches it, and queues the event, again.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { ASYNC_DELIVERY_CALL_LIMITS } from '../../lib/domain/limits.js';

export interface HangingLambda {
  /** A client as a function of the stack has it, pointed here; `gaveUp` counts its invokes that failed. */
  client(gaveUp: { invokes: number }): LambdaClient;
  close(): Promise<void>;
}

const INVOKE_PATH = /^\/2015-03-31\/functions\/([^/]+)\/invocations/;

export async function startHangingLambda(options: { hangMs: number; invoked: (functionName: string, event: unknown) => void }): Promise<HangingLambda> {
  const hanging = new Set<{ response: ServerResponse; timer: NodeJS.Timeout }>();
  const server = createServer((request, response) => {
    const functionName = INVOKE_PATH.exec(request.url ?? '')?.[1];
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (functionName === undefined) {
        response.writeHead(404).end();
        return;
      }
      options.invoked(decodeURIComponent(functionName), JSON.parse(Buffer.concat(chunks).toString('utf8')));
      const answer = {
        response,
        timer: setTimeout(() => {
          hanging.delete(answer);
          response.writeHead(202).end();
        }, options.hangMs),
      };
      hanging.add(answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clients: LambdaClient[] = [];
  return {
    client(gaveUp) {
      const client = new LambdaClient({ region: 'us-east-1', endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, ...ASYNC_DELIVERY_CALL_LIMITS });
      client.middlewareStack.add(
        (next) => async (args) => {
          try {
            return await next(args);
          } catch (error) {
            gaveUp.invokes++;
            throw error;
          }
        },
        { step: 'initialize', name: 'countGivenUp' },
      );
      clients.push(client);
      return client;
    },
    async close() {
      for (const { response, timer } of hanging) {
        clearTimeout(timer);
        response.destroy();
      }
      for (const client of clients) client.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
