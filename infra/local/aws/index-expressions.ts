/**
 * The index's entries and the expressions of a query on it, evaluated here as
 * DynamoDB evaluates them, for the index-lag emulation (index-lag.ts) to place
 * entries DynamoDB Local no longer holds. Only what the queue's queries use is
 * understood; anything else fails loudly rather than answer wrong.
 */
import { TABLE_SCHEMA } from '../../../lib/store/table.js';

export type Item = Record<string, unknown>;

const { dueIndex } = TABLE_SCHEMA;
export const PK = TABLE_SCHEMA.partitionKey;
export const SK = TABLE_SCHEMA.sortKey;
export const INDEX_PK = dueIndex.partitionKey;
export const INDEX_SK = dueIndex.sortKey;
export const ENTRY_ATTRIBUTES: readonly string[] = [PK, SK, INDEX_PK, INDEX_SK, ...dueIndex.projectedAttributes];

/** A query on the index, in the document client's form, as the journal corrects it. */
export interface IndexQuery {
  TableName?: string | undefined;
  IndexName?: string | undefined;
  KeyConditionExpression?: string | undefined;
  FilterExpression?: string | undefined;
  ProjectionExpression?: string | undefined;
  ExpressionAttributeNames?: Record<string, string> | undefined;
  ExpressionAttributeValues?: Record<string, unknown> | undefined;
  ScanIndexForward?: boolean | undefined;
  Limit?: number | undefined;
  ExclusiveStartKey?: Item | undefined;
  Select?: string | undefined;
  [other: string]: unknown;
}

export const itemId = (item: Item): string => JSON.stringify([item[PK], item[SK]]);
export const tableKeyOf = (item: Item): Item => ({ [PK]: item[PK], [SK]: item[SK] });

/** The item's entry in the index as the table's projection makes it, or undefined when it has no index keys. */
export function indexEntryOf(item: Item | undefined): Item | undefined {
  if (!item || typeof item[INDEX_PK] !== 'string' || typeof item[INDEX_SK] !== 'string') return undefined;
  return Object.fromEntries(ENTRY_ATTRIBUTES.filter((name) => item[name] !== undefined).map((name) => [name, item[name]]));
}

export const sameEntry = (a: Item | undefined, b: Item | undefined): boolean => JSON.stringify(a && sorted(a)) === JSON.stringify(b && sorted(b));
const sorted = (item: Item): [string, unknown][] => Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

function compareStrings(a: unknown, b: unknown): number {
  const left = String(a);
  const right = String(b);
  return left < right ? -1 : left > right ? 1 : 0;
}

/** Index order: by the index sort key, ties by the table key. */
export function compareEntries(a: Item, b: Item): number {
  return compareStrings(a[INDEX_SK], b[INDEX_SK]) || compareStrings(a[PK], b[PK]) || compareStrings(a[SK], b[SK]);
}

class UnsupportedExpression extends Error {
  constructor(kind: string, expression: string) {
    super(`the local index-lag emulation cannot evaluate the ${kind} '${expression}'; teach infra/local/aws/index-lag.ts`);
  }
}

const TOKEN = String.raw`[#:]?[A-Za-z0-9_]+`;

function nameOf(token: string, names: Record<string, string>): string {
  if (!token.startsWith('#')) return token;
  const name = Object.hasOwn(names, token) ? names[token] : undefined;
  if (name === undefined) throw new UnsupportedExpression('name', token);
  return name;
}

function valueOf(token: string, values: Record<string, unknown>): unknown {
  if (!Object.hasOwn(values, token)) throw new UnsupportedExpression('value', token);
  return values[token];
}

/** Whether an entry satisfies the query's key condition: `pk = :v`, optionally `AND` one sort key comparison. */
export function keyConditionOf(query: IndexQuery): (entry: Item) => boolean {
  const expression = query.KeyConditionExpression ?? '';
  const names = query.ExpressionAttributeNames ?? {};
  const values = query.ExpressionAttributeValues ?? {};
  const match = new RegExp(String.raw`^\s*(${TOKEN})\s*=\s*(${TOKEN})\s*(?:AND\s+(.+?))?\s*$`, 'is').exec(expression);
  if (!match || nameOf(match[1]!, names) !== INDEX_PK) throw new UnsupportedExpression('key condition', expression);
  const partition = valueOf(match[2]!, values);
  const onSortKey = match[3] === undefined ? () => true : sortKeyCondition(match[3], names, values, expression);
  return (entry) => entry[INDEX_PK] === partition && onSortKey(String(entry[INDEX_SK]));
}

function sortKeyCondition(clause: string, names: Record<string, string>, values: Record<string, unknown>, expression: string): (sortKey: string) => boolean {
  const comparison = new RegExp(String.raw`^(${TOKEN})\s*(<=|>=|<|>|=)\s*(${TOKEN})$`).exec(clause);
  const between = new RegExp(String.raw`^(${TOKEN})\s+BETWEEN\s+(${TOKEN})\s+AND\s+(${TOKEN})$`, 'i').exec(clause);
  const prefix = new RegExp(String.raw`^begins_with\s*\(\s*(${TOKEN})\s*,\s*(${TOKEN})\s*\)$`).exec(clause);
  const attribute = comparison?.[1] ?? between?.[1] ?? prefix?.[1];
  if (attribute === undefined || nameOf(attribute, names) !== INDEX_SK) throw new UnsupportedExpression('key condition', expression);
  if (comparison) {
    const bound = String(valueOf(comparison[3]!, values));
    const operator = comparison[2];
    return (sortKey) => {
      const order = compareStrings(sortKey, bound);
      return operator === '=' ? order === 0 : operator === '<' ? order < 0 : operator === '<=' ? order <= 0 : operator === '>' ? order > 0 : order >= 0;
    };
  }
  if (between) {
    const low = String(valueOf(between[2]!, values));
    const high = String(valueOf(between[3]!, values));
    return (sortKey) => compareStrings(sortKey, low) >= 0 && compareStrings(sortKey, high) <= 0;
  }
  const start = String(valueOf(prefix![2]!, values));
  return (sortKey) => sortKey.startsWith(start);
}

/** Whether an entry passes the query's filter: comparisons `=` or `<>` and attribute_exists/attribute_not_exists, joined by AND. */
export function filterOf(query: IndexQuery): (entry: Item) => boolean {
  const expression = query.FilterExpression;
  if (expression === undefined) return () => true;
  const names = query.ExpressionAttributeNames ?? {};
  const values = query.ExpressionAttributeValues ?? {};
  const operand = (token: string, entry: Item): unknown => (token.startsWith(':') ? valueOf(token, values) : entry[nameOf(token, names)]);
  const clauses = expression.split(/\s+AND\s+/i).map((clause) => {
    const comparison = new RegExp(String.raw`^\s*(${TOKEN})\s*(=|<>)\s*(${TOKEN})\s*$`).exec(clause);
    if (comparison) {
      const [, left, operator, right] = comparison as unknown as [string, string, string, string];
      return (entry: Item) => (operand(left, entry) === operand(right, entry)) === (operator === '=');
    }
    const existence = new RegExp(String.raw`^\s*(attribute_exists|attribute_not_exists)\s*\(\s*(${TOKEN})\s*\)\s*$`).exec(clause);
    if (existence) {
      const [, test, token] = existence as unknown as [string, string, string];
      return (entry: Item) => (entry[nameOf(token, names)] !== undefined) === (test === 'attribute_exists');
    }
    throw new UnsupportedExpression('filter', expression);
  });
  return (entry) => clauses.every((clause) => clause(entry));
}

export function projectionOf(query: IndexQuery): (entry: Item) => Item {
  const expression = query.ProjectionExpression;
  if (expression === undefined) return (entry) => entry;
  const names = query.ExpressionAttributeNames ?? {};
  const attributes = expression.split(',').map((token) => {
    const trimmed = token.trim();
    if (!new RegExp(`^${TOKEN}$`).test(trimmed) || trimmed.startsWith(':')) throw new UnsupportedExpression('projection', expression);
    return nameOf(trimmed, names);
  });
  return (entry) => Object.fromEntries(attributes.filter((name) => entry[name] !== undefined).map((name) => [name, entry[name]]));
}

/** The query DynamoDB Local is sent: the key condition alone, with only the names and values it uses. */
export function keyConditionQuery(query: IndexQuery): IndexQuery {
  const expression = query.KeyConditionExpression ?? '';
  const used = new Set(expression.match(/[#:][A-Za-z0-9_]+/g) ?? []);
  const pick = <Value>(record: Record<string, Value> | undefined): Record<string, Value> | undefined => {
    const kept = Object.entries(record ?? {}).filter(([token]) => used.has(token));
    return kept.length > 0 ? Object.fromEntries(kept) : undefined;
  };
  const { FilterExpression: _filter, ProjectionExpression: _projection, Select: _select, Limit: _limit, ExclusiveStartKey: _start, ...rest } = query;
  const names = pick(query.ExpressionAttributeNames);
  const values = pick(query.ExpressionAttributeValues);
  return { ...rest, ExpressionAttributeNames: names, ExpressionAttributeValues: values };
}
