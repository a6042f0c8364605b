/**
 * The api behind the authorizer over real HTTP on a free local port, as `npm start` serves it, but in-process
 * and on a test's own table and clock: for clients that speak HTTP (the typed client, a browser).
 */
import type { AddressInfo } from 'node:net';
import { createHttpServer } from '../../infra/local/http-server.js';
import { ADMIN_TOKEN, createTestApi, type ApiClient } from './api.js';
import type { FunctionContexts } from './queue.js';

export interface HttpTestApi {
  /** `http://127.0.0.1:<port>` */
  url: string;
  adminToken: string;
  /** The same api, called in-process, for setting up what a test needs. */
  api: ApiClient;
  close(): Promise<void>;
}

export async function serveTestApi(queue: FunctionContexts): Promise<HttpTestApi> {
  const api = createTestApi(queue);
  const server = createHttpServer(api.handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    adminToken: ADMIN_TOKEN,
    api,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
