/**
 * Metrics as CloudWatch embedded metric format (EMF) lines through Powertools.
 * Handlers record into a `QueueMetrics` and flush once per invocation; tests
 * get `noMetrics`, so nothing is printed there, and the local runtime hands the
 * lines to its own CloudWatch rather than printing them.
 */
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';

export type MetricDimensions = Record<string, string>;

export interface QueueMetrics {
  count(name: string, value: number, dimensions?: MetricDimensions): void;
  milliseconds(name: string, value: number, dimensions?: MetricDimensions): void;
  /** Writes everything recorded since the last flush and forgets it. */
  flush(): void;
}

export const noMetrics: QueueMetrics = {
  count: () => undefined,
  milliseconds: () => undefined,
  flush: () => undefined,
};

/** Counts each total under its metric name, in the order the names are listed. */
export function countTotals<K extends string>(metrics: QueueMetrics, names: Readonly<Record<K, string>>, totals: Readonly<Record<NoInfer<K>, number>>): void {
  // oxlint-disable-next-line own-names/no-lookup-by-name -- the keys are the record's own, of a fixed type
  for (const key of Object.keys(names) as K[]) metrics.count(names[key], totals[key]);
}

/** EMF caps one line at 100 metric entries; Powertools would flush early and drop our dimensions. */
const ENTRIES_PER_LINE = 100;

interface Entry {
  name: string;
  unit: (typeof MetricUnit)[keyof typeof MetricUnit];
  value: number;
}

/**
 * EMF metrics when `POWERTOOLS_METRICS_NAMESPACE` is set (the stack sets it on
 * every function), nothing otherwise. One EMF line carries one dimension set, so
 * entries are grouped by their dimensions and each group becomes its own line.
 * The `service` dimension is POWERTOOLS_SERVICE_NAME of `env`: in the local
 * runtime every function shares one process and its environment.
 *
 * `write` takes each line in place of standard output, which Lambda sends to
 * CloudWatch Logs: the local runtime's CloudWatch reads them (infra/local/aws/cloudwatch.ts).
 */
export function createEmfMetrics(env: Record<string, string | undefined> = process.env, write?: (line: string) => void): QueueMetrics {
  if (!env.POWERTOOLS_METRICS_NAMESPACE) return noMetrics;
  const metrics = new Metrics({ namespace: env.POWERTOOLS_METRICS_NAMESPACE, ...(env.POWERTOOLS_SERVICE_NAME ? { serviceName: env.POWERTOOLS_SERVICE_NAME } : {}) });
  const publish = write
    ? (): void => {
        // What publishStoredMetrics prints, written elsewhere; it clears the same.
        write(JSON.stringify(metrics.serializeMetrics()));
        metrics.clearMetrics();
        metrics.clearDimensions();
      }
    : (): void => void metrics.publishStoredMetrics();
  const groups = new Map<string, { dimensions: MetricDimensions; entries: Entry[] }>();
  const record = (entry: Entry, dimensions: MetricDimensions = {}): void => {
    const key = JSON.stringify(Object.entries(dimensions).sort(([a], [b]) => a.localeCompare(b)));
    const group = groups.get(key) ?? { dimensions, entries: [] };
    groups.set(key, group);
    group.entries.push(entry);
  };
  return {
    count: (name, value, dimensions) => record({ name, unit: MetricUnit.Count, value }, dimensions),
    milliseconds: (name, value, dimensions) => record({ name, unit: MetricUnit.Milliseconds, value }, dimensions),
    flush: () => {
      for (const { dimensions, entries } of groups.values()) {
        for (let start = 0; start < entries.length; start += ENTRIES_PER_LINE) {
          metrics.addDimensions(dimensions);
          for (const { name, unit, value } of entries.slice(start, start + ENTRIES_PER_LINE)) metrics.addMetric(name, unit, value);
          publish();
        }
      }
      groups.clear();
    },
  };
}
