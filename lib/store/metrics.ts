/** The per-minute metrics items: one per job type and minute, each counter an attribute that `ADD` sums into. */
import { FINISHED_OUTCOMES, emptyCounts, type MinuteCounts } from '../domain/metrics.js';
import { metricsKey, metricsMinuteSortKey, parseMetricsMinuteSortKey, TTL_ATTRIBUTE } from './keys.js';
import { queryPages, updateItem, type Item, type StoreContext } from './send.js';

const LAG_ATTRIBUTE_PREFIX = 'lag';
const lagAttribute = (bucket: number): string => `${LAG_ATTRIBUTE_PREFIX}${String(bucket).padStart(3, '0')}`;
/** Adds one type's counts to its item for `epochMinute`: one UpdateItem, whatever the counts. */
export async function addMinuteCounts(ctx: StoreContext, type: string, epochMinute: number, counts: MinuteCounts, purgeAtS: number): Promise<void> {
  const additions: [string, number][] = [
    ...FINISHED_OUTCOMES.filter((outcome) => counts.finished[outcome] > 0).map((outcome): [string, number] => [outcome, counts.finished[outcome]]),
    ...[...counts.lag].filter(([, count]) => count > 0).map(([bucket, count]): [string, number] => [lagAttribute(bucket), count]),
  ];
  if (additions.length === 0) return;
  await updateItem(ctx, {
    Key: metricsKey(type, epochMinute),
    UpdateExpression: `ADD ${additions.map((_, i) => `#a${i} :v${i}`).join(', ')} SET #purgeAt = :purgeAt`,
    ExpressionAttributeNames: { ...Object.fromEntries(additions.map(([name], i) => [`#a${i}`, name])), '#purgeAt': TTL_ATTRIBUTE },
    ExpressionAttributeValues: { ...Object.fromEntries(additions.map(([, count], i) => [`:v${i}`, count])), ':purgeAt': purgeAtS },
  });
}

function itemToCounts(item: Item): MinuteCounts {
  const counts = emptyCounts();
  for (const outcome of FINISHED_OUTCOMES) counts.finished[outcome] = Number(item[outcome] ?? 0);
  for (const [name, value] of Object.entries(item)) {
    if (name.startsWith(LAG_ATTRIBUTE_PREFIX)) counts.lag.set(Number(name.slice(LAG_ATTRIBUTE_PREFIX.length)), Number(value));
  }
  return counts;
}

/** One type's minutes from `fromMinute` to `toMinute`: one Query over the sort-key range (paged past 1 MB). */
export async function readTypeMinutes(ctx: StoreContext, type: string, fromMinute: number, toMinute: number): Promise<Map<number, MinuteCounts>> {
  const minutes = new Map<number, MinuteCounts>();
  const pages = queryPages(ctx, {
    KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
    ExpressionAttributeValues: {
      ':pk': metricsKey(type, fromMinute).pk,
      ':from': metricsMinuteSortKey(fromMinute),
      ':to': metricsMinuteSortKey(toMinute),
    },
  });
  for await (const page of pages) {
    for (const item of page.Items ?? []) minutes.set(parseMetricsMinuteSortKey(String(item.sk)), itemToCounts(item));
  }
  return minutes;
}

