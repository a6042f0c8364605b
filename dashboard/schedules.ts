/** The schedules tab: each schedule with its next fire, its last fire and that job's outcome, and pause / resume. */
import { apiPath, ApiError, type Schedule, type SchedulePage } from './api.js';
import type { View, ViewContext } from './context.js';
import { h, routeLink } from './dom.js';
import { lastFireOutcome, timestamp } from './format.js';
import { describe } from './overview.js';

/** One page is enough for a dashboard; past it the API pages with a cursor. */
const LISTED = 100;

function scheduleRow(schedule: Schedule, setPaused: (schedule: Schedule, paused: boolean) => Promise<void>): HTMLTableRowElement {
  const { last_fire: lastFire } = schedule;
  return h(
    'tr',
    { 'data-schedule': schedule.name, class: schedule.paused ? 'paused' : undefined },
    h('th', { scope: 'row' }, schedule.name),
    h('td', {}, routeLink(schedule.job_type, 'jobs', schedule.job_type, 'queued')),
    h('td', {}, h('code', {}, schedule.cron), ` ${schedule.tz}`),
    h('td', { 'data-field': 'next_fire' }, schedule.paused ? 'paused' : timestamp(schedule.next_fire_at)),
    h('td', { 'data-field': 'last_fire' }, timestamp(lastFire?.fire_at)),
    h('td', {}, lastFire?.job_id ? routeLink(lastFire.job_id, 'job', schedule.job_type, lastFire.job_id) : ''),
    h('td', { 'data-field': 'outcome', class: 'truncate' }, lastFireOutcome(lastFire)),
    h(
      'td',
      { class: 'actions' },
      schedule.paused
        ? h('button', { type: 'button', onclick: () => void setPaused(schedule, false) }, 'Resume')
        : h('button', { type: 'button', onclick: () => void setPaused(schedule, true) }, 'Pause'),
    ),
  );
}

export function schedulesView(context: ViewContext): View {
  const results = h('div', { class: 'results' }, h('p', { class: 'empty' }, 'Loading…'));
  const element = h('section', { class: 'panel schedules' }, h('h2', {}, 'Schedules'), results);

  const setPaused = async (schedule: Schedule, paused: boolean) => {
    const action = paused ? 'pause' : 'resume';
    try {
      await context.api.post(`v1/schedules/${apiPath(schedule.name)}/${action}`);
      context.notify(`${schedule.name} ${paused ? 'paused: it makes no job until resumed' : 'resumed: it fires what it missed as its catch_up says'}`);
    } catch (error) {
      context.notify(`could not ${action} ${schedule.name}: ${describe(error)}`, 'error');
    }
    await load();
  };

  const load = async () => {
    try {
      const { schedules } = await context.api.get<SchedulePage>(`v1/schedules?limit=${LISTED}`);
      results.replaceChildren(
        schedules.length === 0
          ? h('p', { class: 'empty' }, 'No schedules (or none this key may read). Create one with PUT /v1/schedules/{name}.')
          : h(
              'table',
              { class: 'schedule-list' },
              h('thead', {}, h('tr', {}, ...['Schedule', 'Job type', 'Cron', 'Next fire', 'Last fire', 'Its job', 'Outcome', ''].map((title) => h('th', { scope: 'col' }, title)))),
              h('tbody', {}, ...schedules.map((schedule) => scheduleRow(schedule, setPaused))),
            ),
      );
    } catch (error) {
      const message =
        error instanceof ApiError && error.status === 404 && error.message.startsWith('no route')
          ? 'This server has no schedules yet (GET /v1/schedules is missing).'
          : `Could not list schedules: ${describe(error)}`;
      results.replaceChildren(h('p', { class: 'empty error-text' }, message));
    }
  };

  return { element, tick: load };
}
