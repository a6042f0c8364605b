/**
 * The operator dashboard: asks for an API key, keeps it for this browser tab
 * only (sessionStorage), and reads the JSON API of the same origin with it.
 */
import { ApiError, createApi, type Api, type MetricsMinute, type Stats } from './api.js';
import type { SharedData, View, ViewContext } from './context.js';
import type { AlarmStatus } from './types.js';
import { h, routeLink } from './dom.js';
import { alarmStateLabel, ALARMS_ELSEWHERE, assessHealth } from './health.js';
import { jobsView, jobView } from './jobs.js';
import { describe, overviewView } from './overview.js';
import { schedulesView } from './schedules.js';

const KEY_STORAGE = 'djq.api-key';
/** Stats cost reads per job type and shard on every call (docs/operations/dashboard.md): every 5 s, and only while the tab is seen. */
const STATS_REFRESH_MS = 5_000;
/** Metrics change once a minute; reading them more often would only cost reads. */
const METRICS_REFRESH_MS = 30_000;

const root = document.getElementById('app')!;

function showLogin(message?: string): void {
  const input = h('input', { type: 'password', name: 'key', required: true, autocomplete: 'off', spellcheck: 'false', 'aria-label': 'API key', placeholder: 'API key' });
  const error = h('p', { class: 'error-text', role: 'alert' }, message ?? '');
  const button = h('button', { type: 'submit' }, 'Open the dashboard');
  const form = h(
    'form',
    {
      class: 'login',
      // form-action 'none' in the page's CSP: the key can never be submitted as a URL, even without this handler.
      onsubmit: (event) => {
        event.preventDefault();
        const key = input.value.trim();
        button.disabled = true;
        void verifyKey(key).then((problem) => {
          button.disabled = false;
          if (problem) {
            error.textContent = problem;
            return;
          }
          sessionStorage.setItem(KEY_STORAGE, key);
          startDashboard(key);
        });
      },
    },
    h('h1', {}, 'Delayed job queue'),
    h('p', {}, 'Paste an API key with a read: scope (admin to pause and resume). It is kept for this tab only and sent only to this server.'),
    input,
    button,
    error,
  );
  root.replaceChildren(form);
  input.focus();
}

async function verifyKey(key: string): Promise<string | undefined> {
  if (!key) return 'Enter a key.';
  try {
    await createApi(key, () => undefined).get<Stats>('v1/stats');
    return undefined;
  } catch (error) {
    if (error instanceof ApiError && error.keyRefused) return 'That key was not accepted.';
    if (error instanceof ApiError && error.status === 403) return 'That key may not read any job type: it needs a read: scope.';
    return `The server could not be asked: ${describe(error)}`;
  }
}

function signOut(message?: string): void {
  sessionStorage.removeItem(KEY_STORAGE);
  stopDashboard?.();
  showLogin(message);
}

let stopDashboard: (() => void) | undefined;

/** Shows a notice; an error stays until dismissed, anything else for 8 s. */
function notifier(notices: HTMLElement): ViewContext['notify'] {
  return (message, kind = 'info') => {
    const notice = h('p', { class: `notice ${kind}` }, message, h('button', { type: 'button', class: 'dismiss', 'aria-label': 'Dismiss', onclick: () => notice.remove() }, '×'));
    notices.prepend(notice);
    if (kind === 'info') setTimeout(() => notice.remove(), 8_000);
  };
}

async function readStats(api: Api, data: SharedData): Promise<void> {
  try {
    data.stats = await api.get<Stats>('v1/stats');
    data.statsError = undefined;
    data.statsAtMs = Date.now();
  } catch (error) {
    data.statsError = describe(error);
  }
}

async function readMetrics(api: Api, data: SharedData): Promise<void> {
  try {
    data.metrics = (await api.get<{ minutes: MetricsMinute[] }>('v1/metrics?minutes=60')).minutes;
    data.metricsNote = undefined;
  } catch (error) {
    data.metrics = undefined;
    data.metricsNote =
      error instanceof ApiError && error.status === 404
        ? 'No charts: this server keeps no per-minute metrics (GET /v1/metrics is missing).'
        : `No charts: ${describe(error)}`;
  }
}

function renderHealth(banner: HTMLElement, updated: HTMLElement, data: SharedData): void {
  const health = assessHealth({ stats: data.stats, statsError: data.statsError, metrics: data.metrics, nowMs: Date.now() });
  const title = { healthy: 'Healthy', degraded: 'Needs attention', down: 'Not healthy' }[health.level];
  banner.className = `health ${health.level}`;
  banner.setAttribute('data-level', health.level);
  banner.replaceChildren(h('strong', {}, title), h('ul', {}, ...health.reasons.map((reason) => h('li', {}, reason))), ...alarmList(data.stats));
  updated.textContent = data.statsAtMs ? `updated ${new Date(data.statsAtMs).toLocaleTimeString(undefined, { hour12: false })}` : '';
}

/** Each of the stack's alarms with its state, its reason on hover; nothing until stats come. */
function alarmList(stats: Stats | undefined): HTMLElement[] {
  if (!stats) return [];
  if (!stats.alarms) return [h('p', { class: 'alarms' }, ALARMS_ELSEWHERE)];
  const item = ({ name, state, reason }: AlarmStatus) => h('li', { 'data-alarm': name, 'data-state': state, title: reason }, `${name} `, h('span', { class: `alarm-state ${state}` }, alarmStateLabel(state)));
  return [h('ul', { class: 'alarms', 'aria-label': 'Alarms' }, ...stats.alarms.map(item))];
}

function startDashboard(key: string): void {
  const api: Api = createApi(key, () => signOut('The key was refused (revoked or expired?). Enter a key again.'));
  const data: SharedData = {};
  const banner = h('div', { class: 'health', role: 'status', 'aria-live': 'polite' });
  const updated = h('span', { class: 'updated' });
  const notices = h('div', { class: 'notices', role: 'status', 'aria-live': 'polite' });
  const main = h('main', {});
  let view: View | undefined;
  let stopped = false;
  let metricsReadAtMs = -Infinity;

  const refresh = async () => {
    const metricsDue = Date.now() - metricsReadAtMs >= METRICS_REFRESH_MS;
    if (metricsDue) metricsReadAtMs = Date.now();
    await Promise.all([readStats(api, data), metricsDue ? readMetrics(api, data) : undefined, view?.tick?.()]);
    if (stopped) return;
    renderHealth(banner, updated, data);
    view?.update?.();
  };

  const context: ViewContext = { api, data, notify: notifier(notices), refresh };

  const route = () => {
    const [name, first, second, third] = location.hash.replace(/^#\/?/, '').split('/').map((segment) => safeDecode(segment));
    if (name === 'jobs') view = jobsView(context, first || undefined, second || 'failed', third || undefined);
    else if (name === 'job' && first && second) view = jobView(context, first, second);
    else if (name === 'schedules') view = schedulesView(context);
    else view = overviewView(context);
    main.replaceChildren(view.element);
    for (const link of nav.querySelectorAll('a')) link.toggleAttribute('aria-current', link.getAttribute('href') === `#/${name ?? ''}`);
  };

  const nav = h('nav', { class: 'tabs' }, routeLink('Queues', ''), routeLink('Jobs', 'jobs'), routeLink('Schedules', 'schedules'));
  const header = h(
    'header',
    {},
    h('h1', {}, 'Delayed job queue'),
    nav,
    h('div', { class: 'session' }, updated, h('button', { type: 'button', onclick: () => void refresh() }, 'Refresh'), h('button', { type: 'button', onclick: () => signOut() }, 'Sign out')),
  );
  root.replaceChildren(header, banner, notices, main);

  // A timer chain rather than setInterval: a slow answer never overlaps the next request.
  let timer: ReturnType<typeof setTimeout> | undefined;
  const loop = async () => {
    if (document.visibilityState === 'visible') await refresh();
    if (!stopped) timer = setTimeout(() => void loop(), STATS_REFRESH_MS);
  };
  const onVisible = () => {
    if (document.visibilityState !== 'visible' || stopped) return;
    clearTimeout(timer);
    void loop();
  };
  document.addEventListener('visibilitychange', onVisible);
  window.addEventListener('hashchange', route);
  stopDashboard = () => {
    stopped = true;
    clearTimeout(timer);
    document.removeEventListener('visibilitychange', onVisible);
    window.removeEventListener('hashchange', route);
  };
  route();
  void loop();
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

const kept = sessionStorage.getItem(KEY_STORAGE);
if (kept) startDashboard(kept);
else showLogin();
