/** What every view of the dashboard gets: the API, the latest shared data and the page's services. */
import type { Api, MetricsMinute, Stats } from './api.js';

export interface SharedData {
  stats?: Stats;
  statsError?: string;
  /** Undefined when the server keeps no metrics (404) or they could not be read; see metricsNote. */
  metrics?: MetricsMinute[];
  metricsNote?: string;
  /** When stats were last read, epoch ms. */
  statsAtMs?: number;
}

export interface ViewContext {
  api: Api;
  data: SharedData;
  notify(message: string, kind?: 'error' | 'info'): void;
  /** Reads stats (and metrics) again now and updates every view. */
  refresh(): Promise<void>;
}

export interface View {
  element: HTMLElement;
  /** Called after shared data changed. */
  update?(): void;
  /** Called on every refresh tick while the page is visible, for a view that reads data of its own. */
  tick?(): Promise<void>;
}
