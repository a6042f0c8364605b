/**
 * The dashboard in a real browser (Debian's Chromium driven by playwright-core)
 * against `npm start`, as a new user meets it: open the printed URL, paste the
 * key, watch a queue and its alarms, open a failed job and replay it, retry every failed job at once, cancel a running job.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, expect, test } from 'vitest';
import { freePort } from '../../infra/local/aws/dynamodb-local.js';
import { call, npmStart, stop, waitForStatus, type Started } from '../../infra/local/npm-start.js';

/** CI installs Debian's chromium there (.ci/run); elsewhere point CHROMIUM_PATH at a Chromium or Chrome. */
const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS_DIR = join(process.cwd(), 'test', 'artifacts');
/** Past the dashboard's own 5 s refresh and the pollers' 5 s pick-up of a changed job type. */
const SEEN_WITHIN_MS = 20_000;

let dataDir: string;
let runtime: Started;
let browser: Browser;
let page: Page;
/** Every URL the page requested: none may carry the key. */
let requestedUrls: string[];

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'djq-dashboard-'));
  delete process.env.API_TOKEN;
  // A revoked key is refused once the gateway's kept answer ends: 1 s here rather than the stack's 30.
  const env = { PORT: String(await freePort()), DATA_DIR: dataDir, POLL_INTERVAL_MS: '200', SWEEP_INTERVAL_MS: '1000', AUTHORIZER_CACHE_TTL_S: '1' };
  [runtime, browser] = await Promise.all([npmStart(env), chromium.launch({ executablePath: CHROMIUM_PATH })]);
  await mkdir(ARTIFACTS_DIR, { recursive: true });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  if (runtime) await stop(runtime);
  await rm(dataDir, { recursive: true, force: true });
});

beforeEach(async () => {
  page = await browser.newPage({ viewport: { width: 1280, height: 600 } });
  requestedUrls = [];
  page.on('request', (request) => requestedUrls.push(request.url()));
});

afterEach(async () => {
  expect(requestedUrls.filter((url) => url.includes(runtime.token))).toEqual([]);
  await page.close();
});

/** Opens the URL npm start printed and signs in with `key`. */
async function signIn(key: string): Promise<void> {
  // A fresh document each time, so one test's open view and timers cannot carry into the next.
  await page.goto('about:blank');
  await page.goto(`${runtime.url}/`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Open the dashboard' }).click();
}

const cell = (type: string, field: string) => page.locator(`tr[data-type="${type}"] td[data-field="${field}"]`);

test('npm start prints the dashboard URL; the page takes the admin key and says the queue is healthy', async () => {
  expect(runtime.output()).toContain(`Dashboard:    ${runtime.url}/`);
  await signIn('djq_0000000000000000_not-a-key');
  await page.getByRole('alert').filter({ hasText: 'That key was not accepted.' }).waitFor({ timeout: SEEN_WITHIN_MS });

  await page.getByLabel('API key').fill(runtime.token);
  await page.getByRole('button', { name: 'Open the dashboard' }).click();
  await page.locator('.health[data-level="healthy"]').waitFor({ timeout: SEEN_WITHIN_MS });
  // Nothing is due: the pollers sleep (or one is about to), and that is healthy.
  expect(await page.locator('.health').textContent()).toMatch(/pollers asleep, nothing due|1 live poller/);
  // Kept for this tab only, and never put in the address.
  expect(await page.evaluate('sessionStorage.length')).toBe(1);
  expect(page.url()).not.toContain(runtime.token);

  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('API key').waitFor();
  expect(await page.evaluate('sessionStorage.length')).toBe(0);
});

test("the health view shows each of the stack's alarms with its state, none in ALARM on a queue at rest", async () => {
  await signIn(runtime.token);
  const alarms = page.locator('.health [data-alarm]');
  await alarms.first().waitFor({ timeout: SEEN_WITHIN_MS });
  const shown = await alarms.evaluateAll((items) => items.map((item) => ({ name: item.getAttribute('data-alarm'), state: item.getAttribute('data-state') })));
  expect(shown.map(({ name }) => name)).toEqual(['DueLagAlarm', 'WorkerAlarm', 'DynamoDbThrottlesAlarm']);
  expect(shown.filter(({ state }) => state === 'ALARM')).toEqual([]);
});

test('a key without a read: scope is told so at sign-in, not that the key was refused', async () => {
  const created = await call(runtime, 'POST', '/v1/keys', { scopes: ['enqueue:*'] });
  await signIn(created.body.key);
  await page.getByRole('alert').filter({ hasText: 'That key may not read any job type: it needs a read: scope.' }).waitFor({ timeout: SEEN_WITHIN_MS });
});

test('a key revoked while the dashboard is open sends the user back to sign in', async () => {
  const created = await call(runtime, 'POST', '/v1/keys', { scopes: ['read:*'] });
  await signIn(created.body.key);
  await page.locator('.health[data-level]').waitFor({ timeout: SEEN_WITHIN_MS });
  expect((await call(runtime, 'DELETE', `/v1/keys/${created.body.id}`)).status).toBe(200);
  await page.getByRole('alert').filter({ hasText: 'The key was refused (revoked or expired?)' }).waitFor({ timeout: SEEN_WITHIN_MS });
  expect(await page.evaluate('sessionStorage.length')).toBe(0);
});

test('a failed job opens with each attempt, its error class, message and trace, and replays as a new job', async () => {
  await call(runtime, 'PUT', '/v1/job-types/flaky', { target: { kind: 'handler', name: 'fail' }, attempts: 2, retry: { kind: 'fixed', delay_s: 0 } });
  // Job data and errors are user input: they must show as text, never as markup.
  const message = '<img src=x id=injected> downstream unavailable';
  await call(runtime, 'PUT', '/v1/jobs/flaky/f1', { data: { message } });
  expect((await waitForStatus(runtime, '/v1/jobs/flaky/f1', 'failed', SEEN_WITHIN_MS)).status).toBe('failed');

  await signIn(runtime.token);
  await page.getByRole('link', { name: 'Jobs', exact: true }).click();
  await page.getByLabel('Type of the job to open').fill('flaky');
  await page.getByLabel('Id of the job to open').fill('f1');
  await page.getByRole('button', { name: 'Open' }).click();

  await page.getByRole('heading', { name: /Job f1/ }).waitFor();
  expect(await page.locator('h2 .status').textContent()).toBe('failed');
  expect(await page.locator('table.history tr[data-attempt]').count()).toBe(2);
  expect(await page.locator('tr[data-attempt="2"] .error-class').textContent()).toBe('Error');
  expect(await page.locator('tr[data-attempt="2"] .error-message').textContent()).toBe(message);
  expect(await page.locator('pre.data').first().textContent()).toContain(message);
  expect(await page.locator('#injected').count()).toBe(0);
  await page.getByText('Trace').last().click();
  expect(await page.locator('pre.trace').last().textContent()).toContain(`Error: ${message}`);

  await page.getByRole('button', { name: 'Replay' }).click();
  await page.waitForURL(/#\/job\/flaky\/job_/);
  const replayedId = decodeURIComponent(page.url().split('/').pop()!);
  await page.getByRole('heading', { name: new RegExp(`Job ${replayedId}`) }).waitFor();
  expect(await page.locator('.notices').textContent()).toContain(`Replayed f1 as ${replayedId}`);
  const replayed = await call(runtime, 'GET', `/v1/jobs/flaky/${replayedId}`);
  expect(replayed.status).toBe(200);
  expect(replayed.body.data).toEqual({ message });
});

test('the queues table shows a queue fill while its type takes no jobs, then drain once it does', async () => {
  const echo = { target: { kind: 'handler', name: 'echo' } };
  await call(runtime, 'PUT', '/v1/job-types/fill-drain', { ...echo, concurrency: 0 });
  await call(runtime, 'POST', '/v1/jobs/fill-drain/batch', { jobs: Array.from({ length: 6 }, (_, i) => ({ id: `j${i}`, data: { i } })) });

  await signIn(runtime.token);
  await cell('fill-drain', 'due').filter({ hasText: /^6$/ }).waitFor({ timeout: SEEN_WITHIN_MS });
  expect(Number((await cell('fill-drain', 'oldest_due_lag').textContent())?.split(' ')[0])).toBeGreaterThan(0);
  await page.screenshot({ path: join(ARTIFACTS_DIR, 'dashboard.png'), fullPage: true });

  await call(runtime, 'PUT', '/v1/job-types/fill-drain', echo);
  await cell('fill-drain', 'due').filter({ hasText: /^0$/ }).waitFor({ timeout: SEEN_WITHIN_MS });
  expect((await waitForStatus(runtime, '/v1/jobs/fill-drain/j5', 'succeeded', SEEN_WITHIN_MS)).status).toBe('succeeded');
});

test('the jobs browser lists a type\'s failed jobs a page at a time, back and forth, and opens one', async () => {
  await call(runtime, 'PUT', '/v1/job-types/many-failures', { target: { kind: 'handler', name: 'fail' }, attempts: 1 });
  await call(runtime, 'POST', '/v1/jobs/many-failures/batch', { jobs: Array.from({ length: 26 }, (_, i) => ({ id: `m${String(i).padStart(2, '0')}`, data: {} })) });
  await waitForStatus(runtime, '/v1/jobs/many-failures/m25', 'failed', SEEN_WITHIN_MS);

  await signIn(runtime.token);
  await page.goto(`${runtime.url}/#/jobs/many-failures/failed`);
  await page.locator('table.job-list tr[data-job]').first().waitFor({ timeout: SEEN_WITHIN_MS });
  expect(await page.locator('table.job-list tr[data-job]').count()).toBe(25);
  await page.getByRole('button', { name: 'Next →' }).click();
  await page.getByText('Page 2').waitFor();
  expect(await page.locator('table.job-list tr[data-job]').count()).toBe(1);
  await page.getByRole('button', { name: '← Previous' }).click();
  await page.getByText('Page 1').waitFor();
  expect(await page.locator('table.job-list tr[data-job]').count()).toBe(25);
  await page.locator('table.job-list tr[data-job] a').first().click();
  await page.getByRole('heading', { name: /Job m\d\d/ }).waitFor();
});

test('"Retry all matching" on a page of failed jobs starts one bulk retry and shows its progress until it ends', async () => {
  await call(runtime, 'PUT', '/v1/job-types/bulk-failures', { target: { kind: 'handler', name: 'fail' }, attempts: 1 });
  await call(runtime, 'POST', '/v1/jobs/bulk-failures/batch', { jobs: ['b0', 'b1', 'b2'].map((id) => ({ id, data: {} })) });
  for (const id of ['b0', 'b1', 'b2']) await waitForStatus(runtime, `/v1/jobs/bulk-failures/${id}`, 'failed', SEEN_WITHIN_MS);

  await signIn(runtime.token);
  await page.goto(`${runtime.url}/#/jobs/bulk-failures/failed`);
  page.once('dialog', (dialog) => void dialog.accept());
  await page.getByRole('button', { name: 'Retry all matching' }).click();
  await page.locator('.bulk-actions [role=status]').filter({ hasText: 'Retry succeeded: 3 replayed of 3 found' }).waitFor({ timeout: SEEN_WITHIN_MS });
});

test('the tag filter lists a type\'s jobs with a tag in any status, newest first, and a job\'s tags link back to it', async () => {
  await call(runtime, 'PUT', '/v1/job-types/tagged', { target: { kind: 'handler', name: 'echo' } });
  const later = new Date(Date.now() + 3_600_000).toISOString();
  for (const [id, tags] of [['t0', ['campaign-9']], ['t1', ['other']], ['t2', ['campaign-9', 'vip']]] as const) {
    expect((await call(runtime, 'PUT', `/v1/jobs/tagged/${id}`, { tags, run_after: later })).status).toBe(201);
  }
  await call(runtime, 'DELETE', '/v1/jobs/tagged/t0');

  await signIn(runtime.token);
  await page.goto(`${runtime.url}/#/jobs/tagged/queued`);
  await page.getByRole('textbox', { name: 'Tag' }).fill('campaign-9');
  await page.getByRole('combobox', { name: 'Status' }).selectOption('any');
  await page.getByRole('button', { name: 'Show' }).click();
  await page.locator('table.job-list tr[data-job="t0"]').waitFor({ timeout: SEEN_WITHIN_MS });
  expect(await page.locator('table.job-list tr[data-job]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-job')))).toEqual(['t2', 't0']);
  await page.locator('table.job-list tr[data-job="t2"] a').click();
  await page.getByRole('heading', { name: /Job t2/ }).waitFor();
  await page.locator('dd.tags').getByRole('link', { name: 'vip' }).click();
  await page.locator('table.job-list tr[data-job="t2"]').waitFor({ timeout: SEEN_WITHIN_MS });
  expect(await page.locator('table.job-list tr[data-job]').count()).toBe(1);
});

test('pause stops a type taking jobs and resume drains it, from the queues table', async () => {
  await call(runtime, 'PUT', '/v1/job-types/pausable', { target: { kind: 'handler', name: 'echo' } });
  await signIn(runtime.token);
  const row = page.locator('tr[data-type="pausable"]');
  await row.getByRole('button', { name: 'Pause' }).click();
  await cell('pausable', 'paused').filter({ hasText: 'paused' }).waitFor({ timeout: SEEN_WITHIN_MS });
  // Pollers act on the types as they last read them (docs/guides/pausing.md): a job enqueued before they read the
  // pause may still be claimed. A job of a type made after the pause runs only once they have read the types again,
  // the pause among them.
  await call(runtime, 'PUT', '/v1/job-types/made-after-pause', { target: { kind: 'handler', name: 'echo' } });
  await call(runtime, 'PUT', '/v1/jobs/made-after-pause/m1', { data: {} });
  expect((await waitForStatus(runtime, '/v1/jobs/made-after-pause/m1', 'succeeded', SEEN_WITHIN_MS)).status).toBe('succeeded');
  await call(runtime, 'PUT', '/v1/jobs/pausable/p1', { data: {} });
  await cell('pausable', 'due').filter({ hasText: /^1$/ }).waitFor({ timeout: SEEN_WITHIN_MS });
  expect((await call(runtime, 'GET', '/v1/jobs/pausable/p1')).body.status).toBe('queued');

  await row.getByRole('button', { name: 'Resume' }).click();
  await cell('pausable', 'paused').filter({ hasText: 'running' }).waitFor({ timeout: SEEN_WITHIN_MS });
  await cell('pausable', 'due').filter({ hasText: /^0$/ }).waitFor({ timeout: SEEN_WITHIN_MS });
  expect((await waitForStatus(runtime, '/v1/jobs/pausable/p1', 'succeeded', SEEN_WITHIN_MS)).status).toBe('succeeded');
});

test('the schedules tab shows a schedule firing every second with its last job outcome, and pauses and resumes it', async () => {
  await call(runtime, 'PUT', '/v1/job-types/ticking', { target: { kind: 'handler', name: 'echo' } });
  expect((await call(runtime, 'PUT', '/v1/schedules/every-second', { cron: '* * * * * *', job_type: 'ticking' })).status).toBe(201);
  try {
    await signIn(runtime.token);
    await page.getByRole('link', { name: 'Schedules' }).click();
    const row = page.locator('tr[data-schedule="every-second"]');
    await row.locator('td[data-field="outcome"]').filter({ hasText: 'succeeded' }).waitFor({ timeout: SEEN_WITHIN_MS });
    await row.getByRole('button', { name: 'Pause' }).click();
    await row.locator('td[data-field="next_fire"]').filter({ hasText: 'paused' }).waitFor({ timeout: SEEN_WITHIN_MS });
    await row.getByRole('button', { name: 'Resume' }).click();
    await row.getByRole('button', { name: 'Pause' }).waitFor({ timeout: SEEN_WITHIN_MS });
  } finally {
    await call(runtime, 'DELETE', '/v1/schedules/every-second');
  }
});

test("an open attempt's page shows the progress its heartbeat reported, as text", async () => {
  // Awaiting its callback, the attempt stays open with no worker busy, so npm start still stops at once.
  await call(runtime, 'PUT', '/v1/job-types/imports', { target: { kind: 'handler', name: 'await_callback' }, timeout_s: 600 });
  await call(runtime, 'PUT', '/v1/jobs/imports/i1', { data: { rows: 1000 } });
  expect((await waitForStatus(runtime, '/v1/jobs/imports/i1', 'awaiting_callback', SEEN_WITHIN_MS)).status).toBe('awaiting_callback');
  const message = '<b id=injected>rows</b> 1-425 of 1000';
  const beat = await call(runtime, 'POST', '/v1/jobs/imports/i1/heartbeat', { attempt: 1, progress: { percent: 42.5, message, data: { rows_done: 425 } } });
  expect(beat.status).toBe(200);

  await signIn(runtime.token);
  await page.locator('.health[data-level]').waitFor({ timeout: SEEN_WITHIN_MS });
  await page.evaluate("location.hash = '#/job/imports/i1'");
  await page.getByRole('heading', { name: 'Progress' }).waitFor({ timeout: SEEN_WITHIN_MS });
  expect(await page.getByLabel('Progress').getAttribute('value')).toBe('42.5');
  expect(await page.locator('p.progress').textContent()).toContain(`42.5 % ${message}`);
  expect(await page.locator('pre.data').first().textContent()).toContain('"rows_done": 425');
  expect(await page.locator('#injected').count()).toBe(0);
});

test('a running job’s page cancels it: its worker stops it and the page shows it cancelled within seconds', async () => {
  await call(runtime, 'PUT', '/v1/job-types/slow', { target: { kind: 'handler', name: 'sleep' }, timeout_s: 600 });
  await call(runtime, 'PUT', '/v1/jobs/slow/s1', { data: { ms: 300_000 } });
  expect((await waitForStatus(runtime, '/v1/jobs/slow/s1', 'running', SEEN_WITHIN_MS)).status).toBe('running');

  await signIn(runtime.token);
  await page.locator('.health[data-level]').waitFor({ timeout: SEEN_WITHIN_MS });
  await page.evaluate("location.hash = '#/job/slow/s1'");
  await page.getByRole('heading', { name: /Job s1/ }).waitFor({ timeout: SEEN_WITHIN_MS });
  await page.getByRole('button', { name: 'Cancel' }).click();
  await page.locator('.notices').filter({ hasText: 'Cancelling s1' }).waitFor({ timeout: SEEN_WITHIN_MS });
  await page.locator('h2 .status').filter({ hasText: 'cancelled' }).waitFor({ timeout: SEEN_WITHIN_MS });
  expect(await page.locator('tr[data-attempt="1"] .error-class').textContent()).toBe('JobCancelledError');
  expect(await page.getByRole('button', { name: 'Cancel' }).isDisabled()).toBe(true);
});
