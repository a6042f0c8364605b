/**
 * Rules DynamoDB enforces on AWS that DynamoDB Local lets pass, checked on the
 * local functions' clients before a command leaves the process, so code that
 * would fail where it is deployed fails here first.
 *
 * - A transaction may not write one item twice: AWS answers ValidationException
 *   ("Transaction request cannot include multiple operations on one item");
 *   DynamoDB Local evaluates both.
 */
import { DynamoDBServiceException } from '@aws-sdk/client-dynamodb';
import type { SdkClient } from './iam/iam-check.js';

type TransactItems = { [operation: string]: { TableName?: string; Key?: Record<string, unknown>; Item?: Record<string, unknown> } | undefined }[];

/** The item a transaction entry acts on, as a comparable string: its table and key (a Put names it by its item). */
function itemOf(entry: TransactItems[number], keyNames: readonly string[]): string {
  const [operation] = Object.values(entry);
  const source = operation?.Key ?? operation?.Item ?? {};
  return JSON.stringify([operation?.TableName, ...keyNames.map((name) => source[name])]);
}

/** The first item a TransactWriteItems input writes more than once, if any. */
export function itemWrittenTwice(transactItems: TransactItems, keyNames: readonly string[]): string | undefined {
  const seen = new Set<string>();
  for (const entry of transactItems) {
    const item = itemOf(entry, keyNames);
    if (seen.has(item)) return item;
    seen.add(item);
  }
  return undefined;
}

/** Refuses, as AWS would, the commands DynamoDB Local would wrongly accept; the table's key is `keyNames`. */
export function enforceAwsRules<Client extends SdkClient>(client: Client, keyNames: readonly string[]): Client {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const items = (args.input as { TransactItems?: TransactItems }).TransactItems;
      const twice = context.commandName === 'TransactWriteItemsCommand' && items ? itemWrittenTwice(items, keyNames) : undefined;
      if (twice !== undefined) {
        throw new DynamoDBServiceException({
          name: 'ValidationException',
          $fault: 'client',
          $metadata: { httpStatusCode: 400 },
          message: `Transaction request cannot include multiple operations on one item (${twice}), as AWS answers; DynamoDB Local does not check`,
        });
      }
      return next(args);
    },
    { step: 'initialize', priority: 'high', name: 'localAwsRules', override: true },
  );
  return client;
}
