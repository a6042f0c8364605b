/** Converting between stored items and domain objects: the key attributes stay in the store layer. */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Job, JobType } from './model.js';

type Item = Record<string, unknown>;

const STORE_ONLY_ATTRIBUTES = ['pk', 'sk', 'gsi1pk', 'gsi1sk', 'purgeAtS'] as const;

function withoutStoreAttributes(item: Item): Item {
  const copy = { ...item };
  for (const name of STORE_ONLY_ATTRIBUTES) delete copy[name];
  return copy;
}

export function itemToJob(item: Item): Job {
  return withoutStoreAttributes(item) as unknown as Job;
}

export function itemToJobType(item: Item): JobType {
  return withoutStoreAttributes(item) as unknown as JobType;
}

/** Items on a ConditionalCheckFailedException come back in wire format, even through the document client. */
export function unmarshallItem(item: Record<string, AttributeValue>): Record<string, unknown> {
  return unmarshall(item);
}
