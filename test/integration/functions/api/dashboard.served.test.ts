/**
 * The dashboard as the api serves it, through the same gateway code as
 * `npm start`: a public page and assets with a strict Content-Security-Policy,
 * and nothing else made public by them.
 */
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { DASHBOARD_SCRIPT, DASHBOARD_STYLES } from '../../../../functions/api/dashboard-assets.generated.js';
import { lambdaContext } from '../../../../infra/local/http-server.js';
import { buildHttpApiEvent, createTestApi, type ApiClient } from '../../../support/api.js';
import { createTestQueue, type TestQueue } from '../../../support/queue.js';

let queue: TestQueue;
let api: ApiClient;

beforeAll(async () => {
  queue = await createTestQueue();
  api = createTestApi(queue);
});
afterAll(async () => {
  await queue.drop();
});

/** A GET without any Authorization header, as a browser navigating to the page sends it. */
async function browse(path: string): Promise<APIGatewayProxyStructuredResultV2 & { headers: Record<string, string> }> {
  const event = buildHttpApiEvent('GET', path, { token: null });
  const result = await api.handler(event, lambdaContext(event.requestContext.requestId));
  return { ...result, headers: (result.headers ?? {}) as Record<string, string> };
}

test('GET / serves the page without a key, under a CSP that allows only its own script, styles and API', async () => {
  const page = await browse('/');
  expect(page.statusCode).toBe(200);
  expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(page.headers['x-content-type-options']).toBe('nosniff');
  const csp = page.headers['content-security-policy'];
  expect(csp).toContain("default-src 'none'");
  expect(csp).toContain("script-src 'self'");
  expect(csp).toContain("connect-src 'self'");
  expect(csp).toContain("form-action 'none'");
  expect(csp).not.toContain('unsafe-inline');
  expect(csp).not.toContain('unsafe-eval');
});

test('the page has no inline script or style: each comes from its own URL', async () => {
  const { body } = await browse('/');
  const scripts = [...String(body).matchAll(/<script\b[^>]*>/g)].map(([tag]) => tag);
  expect(scripts).toEqual(['<script type="module" src="dashboard/app.js">']);
  expect(String(body)).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=/i);
});

test('the script and styles are the committed bundle, served as JavaScript and CSS with nosniff', async () => {
  const script = await browse('/dashboard/app.js');
  expect(script.statusCode).toBe(200);
  expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
  expect(script.headers['x-content-type-options']).toBe('nosniff');
  expect(script.body).toBe(DASHBOARD_SCRIPT);
  const styles = await browse('/dashboard/app.css');
  expect(styles.headers['content-type']).toBe('text/css; charset=utf-8');
  expect(styles.body).toBe(DASHBOARD_STYLES);
});

test('only those three paths are public: any other path, under /dashboard/ too, still needs a key', async () => {
  for (const path of ['/dashboard/other.js', '/index.html', '/v1/stats']) {
    expect((await browse(path)).statusCode).toBe(401);
  }
});
