/** The front page: one row per job type with its counts and pause / resume, and the hour's charts. */
import { apiPath, ApiError, type DeployedCost, type JobTypeStats, type RosterEntry } from './api.js';
import { finishedChart, lagChart } from './charts.js';
import type { View, ViewContext } from './context.js';
import { h, routeLink } from './dom.js';
import { clock, concurrencyInUse, count, dollars, duration, pausedState } from './format.js';

type SetPaused = (type: JobTypeStats, paused: boolean) => Promise<void>;

const queueRow = (type: JobTypeStats, setPaused: SetPaused) =>
  h(
    'tr',
    { 'data-type': type.name, class: type.paused ? 'paused' : undefined },
    h('th', { scope: 'row' }, routeLink(type.name, 'jobs', type.name, 'queued')),
    h('td', { 'data-field': 'due', class: 'number' }, count(type.due)),
    h('td', { 'data-field': 'scheduled', class: 'number' }, count(type.scheduled)),
    h('td', { 'data-field': 'running', class: 'number' }, count(type.running)),
    h('td', { 'data-field': 'awaiting_callback', class: 'number' }, count(type.awaiting_callback)),
    h('td', { 'data-field': 'oldest_due_lag', class: 'number' }, duration(type.oldest_due_lag_ms)),
    h('td', { 'data-field': 'concurrency', class: 'number' }, concurrencyInUse(type.in_flight_weight, type.concurrency)),
    h('td', { 'data-field': 'paused' }, pausedState(type.paused)),
    h(
      'td',
      { class: 'actions' },
      type.paused === true
        ? h('button', { type: 'button', onclick: () => void setPaused(type, false) }, 'Resume')
        : h('button', { type: 'button', onclick: () => void setPaused(type, true) }, 'Pause'),
      routeLink('Failed jobs', 'jobs', type.name, 'failed'),
    ),
  );

function queuesTable(types: JobTypeStats[], setPaused: SetPaused): HTMLTableElement {
  return h(
    'table',
    { class: 'queues' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ...['Job type', 'Due', 'Scheduled', 'Running', 'Awaiting callback', 'Oldest due lag', 'Concurrency in use', 'State', ''].map((title, column) =>
          h('th', { scope: 'col', class: column >= 1 && column <= 6 ? 'number' : undefined }, title),
        ),
      ),
    ),
    h('tbody', {}, ...types.map((type) => queueRow(type, setPaused))),
  );
}

function rosterList(entries: { role: string; entry: RosterEntry }[]): HTMLUListElement {
  return h(
    'ul',
    { class: 'roster' },
    ...entries.map(({ role, entry }) =>
      h(
        'li',
        {},
        h('span', { class: `badge ${role}` }, role),
        ` ${entry.id} on ${entry.host}`,
        entry.shards ? ` · shards ${entry.shards.join(', ')}` : '',
        ` · last seen ${duration(Math.max(0, Date.now() - Date.parse(entry.last_seen_at)))} ago`,
      ),
    ),
  );
}

const SERVICE_NAMES: Readonly<Record<string, string>> = {
  lambda: 'Lambda',
  dynamodb: 'DynamoDB',
  api_gateway: 'API Gateway',
  eventbridge: 'EventBridge',
  sqs: 'SQS',
  ssm: 'Parameter Store',
  cloudwatch_metrics: 'CloudWatch metrics',
  cloudwatch_alarms: 'CloudWatch alarms',
  cloudwatch_logs: 'CloudWatch Logs',
};

/** Each service the traffic or the stack costs anything in: what the traffic so far cost, and what the stack costs a month. */
function costTable(cost: DeployedCost): HTMLTableElement {
  const services = Object.keys(SERVICE_NAMES).filter((service) => (cost.traffic_dollars[service] ?? 0) > 0 || (cost.fixed_dollars_per_month[service] ?? 0) > 0);
  return h(
    'table',
    { class: 'cost' },
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Service'), h('th', { scope: 'col', class: 'number' }, 'Traffic so far'), h('th', { scope: 'col', class: 'number' }, 'Fixed, a month'))),
    h(
      'tbody',
      {},
      ...services.map((service) =>
        h(
          'tr',
          { 'data-service': service },
          h('th', { scope: 'row' }, SERVICE_NAMES[service] ?? service),
          h('td', { class: 'number' }, dollars(cost.traffic_dollars[service] ?? 0)),
          h('td', { class: 'number' }, dollars(cost.fixed_dollars_per_month[service] ?? 0)),
        ),
      ),
    ),
  );
}

export function overviewView(context: ViewContext): View {
  const queues = h('section', { class: 'panel', 'aria-labelledby': 'queues-title' });
  const charts = h('section', { class: 'panel', 'aria-labelledby': 'charts-title' });
  const roster = h('section', { class: 'panel', 'aria-labelledby': 'roster-title' });
  const cost = h('section', { class: 'panel', 'aria-labelledby': 'cost-title' });
  const element = h('div', { class: 'overview' }, queues, charts, roster, cost);

  const setPaused = async (type: JobTypeStats, paused: boolean) => {
    const action = paused ? 'pause' : 'resume';
    try {
      await context.api.post(`v1/job-types/${apiPath(type.name)}/${action}`);
      context.notify(`${type.name} ${paused ? 'paused: its jobs wait, none is claimed' : 'resumed'}`);
    } catch (error) {
      const reason = error instanceof ApiError && error.status === 404 && error.message.startsWith('no route')
        ? 'this server has no pause / resume yet'
        : describe(error);
      context.notify(`could not ${action} ${type.name}: ${reason}`, 'error');
    }
    await context.refresh();
  };

  const renderQueues = () => {
    const stats = context.data.stats;
    const types = stats?.job_types ?? [];
    const body =
      types.length === 0
        ? h('p', { class: 'empty' }, stats ? 'No job types yet (or none this key may read). Create one with PUT /v1/job-types/{name}.' : 'Loading…')
        : queuesTable(types, setPaused);
    queues.replaceChildren(h('h2', { id: 'queues-title' }, 'Queues'), body);
  };

  const renderCharts = () => {
    const { metrics, metricsNote } = context.data;
    const nowMs = Date.now();
    charts.replaceChildren(
      h('h2', { id: 'charts-title' }, 'Last hour'),
      metrics === undefined
        ? h('p', { class: 'empty', 'data-chart': 'none' }, metricsNote ?? 'Loading…')
        : h('div', { class: 'charts' }, finishedChart(metrics, nowMs), lagChart(metrics, nowMs)),
    );
  };

  const renderRoster = () => {
    const stats = context.data.stats;
    const entries = [...(stats?.pollers ?? []).map((entry) => ({ role: 'poller', entry })), ...(stats?.workers ?? []).map((entry) => ({ role: 'worker', entry }))];
    roster.replaceChildren(
      h('h2', { id: 'roster-title' }, 'Pollers and workers seen in the last minute'),
      entries.length === 0 ? h('p', { class: 'empty' }, stats ? 'None.' : 'Loading…') : rosterList(entries),
    );
  };

  // Only a server that meters itself (npm start) says it; deployed, the AWS bill does.
  const renderCost = () => {
    const deployed = context.data.stats?.deployed_cost;
    cost.hidden = deployed === undefined;
    if (!deployed) return;
    cost.replaceChildren(
      h('h2', { id: 'cost-title' }, 'Would have cost deployed'),
      h('p', {}, `Since ${clock(Date.parse(deployed.since))}: ${dollars(deployed.total_dollars)}, the traffic and the stack's fixed costs over that time, at the ${deployed.region} list prices of ${deployed.prices_as_of}.`),
      costTable(deployed),
    );
  };

  const update = () => {
    renderQueues();
    renderCharts();
    renderRoster();
    renderCost();
  };
  update();
  return { element, update };
}

export function describe(error: unknown): string {
  if (error instanceof ApiError) return error.describe();
  return error instanceof Error ? error.message : String(error);
}
