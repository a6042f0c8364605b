/** The jobs browser (by type and status, or by tag, paged) and the page of one job. */
import { apiPath, ApiError, JOB_STATUSES, TERMINAL_STATUSES, type Attempt, type Job, type JobPage, type JobProgress } from './api.js';
import { bulkRetryControls } from './bulk.js';
import type { View, ViewContext } from './context.js';
import { h, replace, routeHref, routeLink } from './dom.js';
import { ABSENT, json, timestamp } from './format.js';
import { describe } from './overview.js';

export const PAGE_SIZE = 25;

const statusBadge = (status: string) => h('span', { class: `status ${status}` }, status.replace('_', ' '));

const lastError = (job: Job): string => {
  const error = [...job.history].reverse().find((attempt) => attempt.error)?.error;
  return error ? `${error.class ?? 'Error'}: ${error.message ?? ''}` : '';
};

/** A form to open any job by its type and id, for when the listing cannot find it. */
function openByIdForm(typeNames: string[], type: string): HTMLFormElement {
  const typeInput = h('input', { name: 'type', required: true, value: type, list: 'job-type-names', 'aria-label': 'Type of the job to open', placeholder: 'job type' });
  const idInput = h('input', { name: 'id', required: true, 'aria-label': 'Id of the job to open', placeholder: 'job id' });
  return h(
    'form',
    {
      class: 'open-job',
      onsubmit: (event) => {
        event.preventDefault();
        location.hash = routeHref('job', typeInput.value.trim(), idInput.value.trim());
      },
    },
    h('datalist', { id: 'job-type-names' }, ...typeNames.map((name) => h('option', { value: name }))),
    h('label', {}, 'Open a job by id '),
    typeInput,
    idInput,
    h('button', { type: 'submit' }, 'Open'),
  );
}

/** Whether the user has typed into the open-by-id form. */
function openFormTouched(view: HTMLElement): boolean {
  return [...view.querySelectorAll<HTMLInputElement>('form.open-job input')].some((input) => input.value !== input.defaultValue);
}

function jobListTable(jobs: Job[]): HTMLTableElement {
  return h(
    'table',
    { class: 'job-list' },
    h('thead', {}, h('tr', {}, ...['Job', 'Status', 'Attempt', 'Run after', 'Finished', 'Last error'].map((title) => h('th', { scope: 'col', class: title === 'Attempt' ? 'number' : undefined }, title)))),
    h(
      'tbody',
      {},
      ...jobs.map((job) =>
        h(
          'tr',
          { 'data-job': job.id },
          h('td', {}, routeLink(job.id, 'job', job.type, job.id)),
          h('td', {}, statusBadge(job.status)),
          h('td', { class: 'number' }, `${job.attempt} / ${job.max_attempts}`),
          h('td', {}, timestamp(job.run_after)),
          h('td', {}, timestamp(job.finished_at)),
          h('td', { class: 'truncate' }, lastError(job)),
        ),
      ),
    ),
  );
}

/** The status a tag listing shows jobs in when it is not narrowed to one: in the route as `any`. */
export const ANY_STATUS = 'any';

/** The route of a listing: a type's jobs in a status, or with a tag (in any status, or in one). */
export const jobsHref = (type: string, status: string, tag?: string): string => (tag ? routeHref('jobs', type, status, tag) : routeHref('jobs', type, status));

export function jobsView(context: ViewContext, initialType: string | undefined, initialStatus: string, tag?: string): View {
  const typeNames = () => (context.data.stats?.job_types ?? []).map((type) => type.name);
  const type = initialType ?? typeNames()[0] ?? '';
  const typeSelect = h('select', { name: 'type', 'aria-label': 'Job type' }, ...[...new Set([type, ...typeNames()])].filter(Boolean).map((name) => h('option', { value: name, selected: name === type }, name)));
  const statusSelect = h(
    'select',
    { name: 'status', 'aria-label': 'Status' },
    h('option', { value: ANY_STATUS, selected: initialStatus === ANY_STATUS }, 'any (with a tag)'),
    ...JOB_STATUSES.map((status) => h('option', { value: status, selected: status === initialStatus }, status.replace('_', ' '))),
  );
  const tagInput = h('input', { name: 'tag', value: tag ?? '', 'aria-label': 'Tag', placeholder: 'any tag', maxlength: 64 });
  const status = initialStatus === ANY_STATUS ? undefined : initialStatus;
  const what = `${status ? status.replace('_', ' ') : ''} jobs of ${type}${tag ? ` tagged ${tag}` : ''}`.trim();
  const results = h('div', { class: 'results' });
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages' });
  const filter = h(
    'form',
    {
      class: 'filter',
      onsubmit: (event) => {
        event.preventDefault();
        location.hash = jobsHref(typeSelect.value, statusSelect.value, tagInput.value.trim());
      },
    },
    h('label', {}, 'Type ', typeSelect),
    h('label', {}, 'Status ', statusSelect),
    h('label', {}, 'Tag ', tagInput),
    h('button', { type: 'submit' }, 'Show'),
  );
  const element = h('section', { class: 'panel jobs' }, h('h2', {}, 'Jobs'), filter, results, pager, openByIdForm(typeNames(), type));

  // cursors[n] opens page n; the API's cursors only go forward, so the way back is remembered here.
  const cursors: (string | null)[] = [null];
  let page = 0;

  const load = async () => {
    if (!type) {
      results.replaceChildren(h('p', { class: 'empty' }, 'No job types yet.'));
      return;
    }
    if (!status && !tag) {
      results.replaceChildren(h('p', { class: 'empty' }, 'Choose a status, or give a tag to list jobs in any status.'));
      return;
    }
    results.replaceChildren(h('p', { class: 'empty' }, 'Loading…'));
    const cursor = cursors[page];
    const query = new URLSearchParams({ ...(status ? { status } : {}), ...(tag ? { tag } : {}), limit: String(PAGE_SIZE), ...(cursor ? { cursor } : {}) });
    try {
      const answer = await context.api.get<JobPage>(`v1/jobs/${apiPath(type)}?${query.toString()}`);
      if (answer.next_cursor) cursors[page + 1] = answer.next_cursor;
      else cursors.length = page + 1;
      renderPage(answer);
    } catch (error) {
      const message =
        error instanceof ApiError && error.status === 404 && error.message.startsWith('no route')
          ? 'This server cannot list jobs yet (GET /v1/jobs/{type} is missing). Open a job by its id below.'
          : `Could not list ${what}: ${describe(error)}`;
      results.replaceChildren(h('p', { class: 'empty error-text' }, message));
      pager.replaceChildren();
    }
  };

  const renderPage = ({ jobs }: JobPage) => {
    results.replaceChildren(
      ...(jobs.length === 0
        ? [h('p', { class: 'empty' }, `No ${what}${page > 0 ? ' on this page' : ''}.`)]
        : [status ? bulkRetryControls(context, type, status, jobs, tag) : null, jobListTable(jobs)].filter((node) => node !== null)),
    );
    const previous = h('button', { type: 'button', disabled: page === 0, onclick: () => ((page -= 1), void load()) }, '← Previous');
    const next = h('button', { type: 'button', disabled: cursors[page + 1] === undefined, onclick: () => ((page += 1), void load()) }, 'Next →');
    pager.replaceChildren(previous, h('span', {}, `Page ${page + 1}`), next);
  };

  void load();
  return {
    element,
    // Opened before the first stats arrived: show the first type once its name is known, unless the user has
    // begun to open a job by id, whose typing the new view would throw away.
    update: () => {
      const first = typeNames()[0];
      if (!type && first && !openFormTouched(element)) location.hash = jobsHref(first, initialStatus, tag);
    },
  };
}

/** The attempt's latest report: a bar when it gave a percent, its message, when and by which attempt, and its data. */
function progressSection(progress: JobProgress): HTMLElement[] {
  const { percent, message, data } = progress;
  const summary = h(
    'p',
    { class: 'progress' },
    percent !== null ? h('progress', { max: 100, value: percent, 'aria-label': 'Progress' }) : null,
    percent !== null ? ` ${percent} %` : null,
    message ? h('span', { class: 'progress-message' }, ` ${message}`) : null,
    h('span', { class: 'notice' }, ` (attempt ${progress.attempt}, ${timestamp(progress.at)})`),
  );
  return [h('h3', {}, 'Progress'), summary, ...(data !== null && data !== undefined ? [h('pre', { class: 'data' }, json(data))] : [])];
}

function attemptRow(attempt: Attempt): HTMLElement[] {
  const error = attempt.error;
  const worker = attempt.worker ? [attempt.worker.host, attempt.worker.id].filter(Boolean).join(' · ') : ABSENT;
  const row = h(
    'tr',
    { 'data-attempt': attempt.attempt },
    h('td', { class: 'number' }, attempt.attempt),
    h('td', {}, attempt.outcome ? statusBadge(attempt.outcome) : ABSENT),
    h('td', {}, timestamp(attempt.claimed_at)),
    h('td', {}, timestamp(attempt.started_at)),
    h('td', {}, timestamp(attempt.ended_at)),
    h('td', {}, worker),
    h('td', { class: 'error-class' }, error?.class ?? ''),
    h('td', { class: 'error-message' }, error?.message ?? ''),
  );
  if (!error?.trace) return [row];
  return [row, h('tr', { class: 'trace-row' }, h('td', { colspan: 8 }, h('details', {}, h('summary', {}, 'Trace'), h('pre', { class: 'trace' }, error.trace))))];
}

function historySection(job: Job): HTMLElement[] {
  const heading = h('h3', {}, `Attempts${job.history_dropped > 0 ? ` (the ${job.history_dropped} oldest not kept)` : ''}`);
  if (job.history.length === 0) return [heading, h('p', { class: 'empty' }, 'No attempt yet.')];
  const titles = ['#', 'Outcome', 'Claimed', 'Started', 'Ended', 'Worker', 'Error class', 'Message'];
  return [
    heading,
    h(
      'table',
      { class: 'history' },
      h('thead', {}, h('tr', {}, ...titles.map((title) => h('th', { scope: 'col' }, title)))),
      h('tbody', {}, ...job.history.flatMap(attemptRow)),
    ),
  ];
}

/** What the Cancel button does to this job, or why it does nothing. */
function cancelTitle(job: Job, terminal: boolean): string {
  if (terminal) return 'A finished job cannot be cancelled';
  if (job.cancel_requested_at !== null) return 'Being cancelled: its worker is stopping it';
  if (job.status === 'running') return 'Asks its worker to stop it: it ends cancelled within seconds';
  return 'Cancels it at once';
}

/** Cancel, for any job that has not finished and is not being cancelled already. */
function cancelButton(job: Job, terminal: boolean, onCancel: () => void): HTMLElement {
  const disabled = terminal || job.cancel_requested_at !== null;
  return h('button', { type: 'button', class: 'danger', onclick: onCancel, disabled, title: cancelTitle(job, terminal) }, 'Cancel');
}

const field = (name: string, value: string | number) => [h('dt', {}, name), h('dd', {}, value)];

/** What a job holds, as a definition list: its times, keys, trace and tags. */
function jobFields(job: Job): HTMLElement {
  return h(
    'dl',
    { class: 'fields' },
    ...field('type', job.type),
    ...field('attempt', `${job.attempt} of ${job.max_attempts}`),
    ...field('delivery', job.delivery_strategy),
    ...field('run after', timestamp(job.run_after)),
    ...field('expires at', timestamp(job.expires_at)),
    ...field('created', timestamp(job.created_at)),
    ...field('updated', timestamp(job.updated_at)),
    ...field('finished', timestamp(job.finished_at)),
    ...field('claimed until', timestamp(job.claimed_until)),
    ...(job.cancel_requested_at !== null ? field('cancel asked', `${timestamp(job.cancel_requested_at)} by ${job.cancelled_by ?? ABSENT}`) : []),
    ...(job.status === 'cancelled' ? field('cancelled by', job.cancelled_by ?? ABSENT) : []),
    ...field('priority', job.priority),
    ...field('weight', job.weight),
    ...field('throttle key', job.throttle_key ?? ABSENT),
    ...field('correlation key', job.correlation_key ?? ABSENT),
    ...field('dedup key', job.dedup ? `${job.dedup.key} (window ${job.dedup.window_s} s)` : ABSENT),
    ...field('debounce key', job.debounce ? `${job.debounce.key} (${job.debounce_count} later enqueues folded in)` : ABSENT),
    ...field('trace', job.traceparent ?? ABSENT),
    h('dt', {}, 'tags'),
    h('dd', { class: 'tags' }, ...(job.tags?.length ? job.tags.flatMap((tag) => [h('a', { href: jobsHref(job.type, ANY_STATUS, tag) }, tag), ' ']) : [ABSENT])),
  );
}

export function jobView(context: ViewContext, type: string, id: string, notice?: string): View {
  const element = h('section', { class: 'panel job' }, h('p', { class: 'empty' }, 'Loading…'));
  let shown: Job | undefined;

  const act = async (action: 'replay' | 'cancel') => {
    try {
      if (action === 'replay') {
        const replayed = await context.api.post<Job>(`v1/jobs/${apiPath(type, id)}/replay`);
        context.notify(`Replayed ${id} as ${replayed.id}`);
        location.hash = routeHref('job', replayed.type, replayed.id);
        return;
      }
      const answered = await context.api.delete<Job>(`v1/jobs/${apiPath(type, id)}`);
      render(answered);
      context.notify(answered.status === 'cancelled' ? `Cancelled ${id}` : `Cancelling ${id}: its worker is stopping it, it ends cancelled within seconds`);
    } catch (error) {
      context.notify(`Could not ${action} ${id}: ${describe(error)}`, 'error');
    }
  };

  const render = (job: Job) => {
    shown = job;
    const terminal = TERMINAL_STATUSES.has(job.status);
    replace(
      element,
      h('p', { class: 'crumbs' }, routeLink('Queues', ''), ' / ', routeLink(job.type, 'jobs', job.type, job.status), ' / ', job.id),
      h('h2', {}, `Job ${job.id} `, statusBadge(job.status)),
      notice ? h('p', { class: 'notice' }, notice) : null,
      h(
        'div',
        { class: 'actions' },
        h('button', { type: 'button', onclick: () => void act('replay'), disabled: !terminal, title: 'A new job with the same data, due now' }, 'Replay'),
        cancelButton(job, terminal, () => void act('cancel')),
      ),
      jobFields(job),
      ...(job.progress ? progressSection(job.progress) : []),
      h('h3', {}, 'Data'),
      h('pre', { class: 'data' }, json(job.data)),
      job.result !== null && job.result !== undefined ? h('h3', {}, 'Result') : null,
      job.result !== null && job.result !== undefined ? h('pre', { class: 'data' }, json(job.result)) : null,
      ...historySection(job),
    );
  };

  const load = async () => {
    try {
      const job = await context.api.get<Job>(`v1/jobs/${apiPath(type, id)}`);
      // Re-rendering an unchanged job would close the trace a reader opened.
      if (!shown || job.updated_at !== shown.updated_at || job.status !== shown.status) render(job);
    } catch (error) {
      element.replaceChildren(routeLink('← Queues', ''), h('p', { class: 'empty error-text' }, `Could not read job ${id} of ${type}: ${describe(error)}`));
    }
  };

  void load();
  return {
    element,
    // A finished job does not change: it is read once.
    tick: async () => {
      if (!shown || !TERMINAL_STATUSES.has(shown.status)) await load();
    },
  };
}
