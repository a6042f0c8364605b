/** The two charts of the last hour, drawn as inline SVG: no chart library for 60 bars and two lines. */
import type { FinishedCounts, MetricsMinute } from './types.js';
import { h, svg } from './dom.js';
import { clock, duration } from './format.js';

const WIDTH = 640;
const HEIGHT = 170;
const LEFT = 56;
const RIGHT = 8;
const TOP = 10;
const BOTTOM = 22;
const MINUTE_MS = 60_000;
const WINDOW_MINUTES = 60;

export const OUTCOMES = ['succeeded', 'failed', 'expired', 'retried'] as const satisfies readonly (keyof FinishedCounts)[];

interface Frame {
  root: SVGSVGElement;
  /** x of the left edge of the minute starting at `atMs`. */
  x(atMs: number): number;
  y(value: number): number;
  slotWidth: number;
}

/** Axes for the hour ending with the current minute, a y scale up to `max`, labelled by `label`. */
function frame(title: string, nowMs: number, max: number, label: (value: number) => string): Frame {
  const endMs = Math.floor(nowMs / MINUTE_MS) * MINUTE_MS + MINUTE_MS;
  const startMs = endMs - WINDOW_MINUTES * MINUTE_MS;
  const plotWidth = WIDTH - LEFT - RIGHT;
  const plotHeight = HEIGHT - TOP - BOTTOM;
  const slotWidth = plotWidth / WINDOW_MINUTES;
  const x = (atMs: number) => LEFT + ((atMs - startMs) / MINUTE_MS) * slotWidth;
  const y = (value: number) => TOP + plotHeight - (value / max) * plotHeight;
  const root = svg('svg', { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: 'img', 'aria-label': title, class: 'chart' }, svg('title', {}, title));
  for (const tick of [0, max / 2, max]) {
    root.append(
      svg('line', { x1: LEFT, x2: WIDTH - RIGHT, y1: y(tick), y2: y(tick), class: 'grid' }),
      svg('text', { x: LEFT - 6, y: y(tick) + 4, 'text-anchor': 'end', class: 'axis' }, label(tick)),
    );
  }
  for (let minute = 0; minute <= WINDOW_MINUTES; minute += 15) {
    const atMs = startMs + minute * MINUTE_MS;
    // The outer labels align inwards, so neither is cut at the edge of the chart.
    const anchor = minute === 0 ? 'start' : minute === WINDOW_MINUTES ? 'end' : 'middle';
    root.append(svg('text', { x: x(atMs), y: HEIGHT - 6, 'text-anchor': anchor, class: 'axis' }, clock(atMs)));
  }
  return { root, x, y, slotWidth };
}

/** A maximum for the y axis that halves to a round number. */
function niceMax(value: number, minimum: number): number {
  const target = Math.max(value, minimum);
  const magnitude = 10 ** Math.floor(Math.log10(target));
  const step = [1, 2, 5, 10].find((factor) => factor * magnitude >= target) ?? 10;
  return step * magnitude;
}

const inWindow = (minutes: MetricsMinute[], nowMs: number) =>
  minutes.filter((minute) => {
    const atMs = Date.parse(minute.at);
    return Number.isFinite(atMs) && atMs > nowMs - (WINDOW_MINUTES + 1) * MINUTE_MS && atMs <= nowMs;
  });

function legend(entries: { name: string; className: string; value: string }[]): HTMLElement {
  return h(
    'ul',
    { class: 'legend' },
    ...entries.map(({ name, className, value }) => h('li', {}, h('span', { class: `swatch ${className}` }), `${name} `, h('strong', {}, value))),
  );
}

/** Jobs finished per minute, stacked by outcome, with the hour's total of each outcome in the legend. */
export function finishedChart(minutes: MetricsMinute[], nowMs: number): HTMLElement {
  const shown = inWindow(minutes, nowMs);
  const total = (minute: MetricsMinute) => OUTCOMES.reduce((sum, outcome) => sum + (minute.finished[outcome] ?? 0), 0);
  const max = niceMax(Math.max(0, ...shown.map(total)), 2);
  const chart = frame('Jobs finished per minute, by outcome', nowMs, max, (value) => String(Math.round(value)));
  for (const minute of shown) {
    const atMs = Date.parse(minute.at);
    let stacked = 0;
    const parts = OUTCOMES.filter((outcome) => (minute.finished[outcome] ?? 0) > 0);
    const summary = `${clock(atMs)}: ${parts.map((outcome) => `${minute.finished[outcome]} ${outcome}`).join(', ') || 'none finished'}`;
    for (const outcome of parts) {
      const value = minute.finished[outcome] ?? 0;
      const top = chart.y(stacked + value);
      chart.root.append(
        svg(
          'rect',
          { x: chart.x(atMs) + 1, y: top, width: Math.max(1, chart.slotWidth - 2), height: chart.y(stacked) - top, class: `bar ${outcome}` },
          svg('title', {}, summary),
        ),
      );
      stacked += value;
    }
  }
  const totals = OUTCOMES.map((outcome) => ({
    name: outcome,
    className: outcome,
    value: String(shown.reduce((sum, minute) => sum + (minute.finished[outcome] ?? 0), 0)),
  }));
  return h('figure', { class: 'chart-box', 'data-chart': 'finished' }, h('figcaption', {}, 'Jobs finished per minute'), chart.root, legend(totals));
}

/** Scheduling lag (ready to claimed) per minute: p50 and p99 lines, broken where a minute claimed nothing. */
export function lagChart(minutes: MetricsMinute[], nowMs: number): HTMLElement {
  const shown = inWindow(minutes, nowMs);
  const values = shown.flatMap((minute) => [minute.lag_p50_ms, minute.lag_p99_ms]).filter((value): value is number => value !== null);
  const max = niceMax(Math.max(0, ...values), 100);
  const chart = frame('Scheduling lag per minute, p50 and p99', nowMs, max, (value) => duration(value));
  const series = [
    { name: 'p50', key: 'lag_p50_ms' as const },
    { name: 'p99', key: 'lag_p99_ms' as const },
  ];
  for (const { name, key } of series) {
    let path = '';
    let previousMissing = true;
    for (const minute of shown) {
      const value = minute[key];
      if (value === null) {
        previousMissing = true;
        continue;
      }
      const atMs = Date.parse(minute.at);
      const x = chart.x(atMs) + chart.slotWidth / 2;
      path += `${previousMissing ? 'M' : 'L'}${x.toFixed(1)},${chart.y(value).toFixed(1)}`;
      previousMissing = false;
      chart.root.append(svg('circle', { cx: x, cy: chart.y(value), r: 2, class: `dot ${name}` }, svg('title', {}, `${clock(atMs)}: ${name} ${duration(value)}`)));
    }
    if (path) chart.root.append(svg('path', { d: path, class: `line ${name}` }));
  }
  const worst = (key: 'lag_p50_ms' | 'lag_p99_ms') => {
    const present = shown.map((minute) => minute[key]).filter((value): value is number => value !== null);
    return present.length > 0 ? `max ${duration(Math.max(...present))}` : 'no claims';
  };
  return h(
    'figure',
    { class: 'chart-box', 'data-chart': 'lag' },
    h('figcaption', {}, 'Scheduling lag (due → claimed)'),
    chart.root,
    legend(series.map(({ name, key }) => ({ name, className: name, value: worst(key) }))),
  );
}
