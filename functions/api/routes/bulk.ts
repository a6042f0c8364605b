/** Bulk operations: start one on a type's jobs, and read how far it got. */
import { OPERATION_ID_PATTERN } from '../../../lib/domain/bulk.js';
import { ForbiddenError, NotFoundError } from '../../../lib/domain/errors.js';
import { getOperation, startBulkOperation } from '../../../lib/queue/bulk/start-bulk-operation.js';
import { bulkRequestFromBody, bulkRequestSchema, operationToApi } from '../../../lib/wire/bulk.js';
import { parseWith } from '../../../lib/wire/parse.js';
import { json } from '../../shared/http.js';
import { holdsScopeOn, mayRead } from '../access.js';
import { parseJsonBody, pathParam } from '../http.js';
import { typeName, type Route, type RouteDeps } from './route.js';

export function bulkRoutes({ ctx, jobTypes }: RouteDeps) {
  return {
    startBulk: async (event, principal) => {
      const request = bulkRequestFromBody(parseWith(bulkRequestSchema, parseJsonBody(event)));
      const jobType = await jobTypes.require(typeName(event));
      // typeScope admits keys only; the operation records the key that started it.
      if (principal?.kind !== 'key') throw new ForbiddenError(`this route needs scope enqueue:${jobType.name}`);
      const { operation, created } = await startBulkOperation(ctx, jobType, request, principal.keyId);
      return json(created ? 202 : 200, operationToApi(operation));
    },
    getOperation: async (event, principal) => {
      const id = pathParam(event, 'id', OPERATION_ID_PATTERN);
      const operation = await getOperation(ctx, id);
      // Another type's operation is answered as a missing one: its id tells nothing of that type.
      if (operation === undefined || !holdsScopeOn(principal, operation.type)) throw new NotFoundError(`operation "${id}" does not exist`);
      if (!mayRead(principal, operation.type)) throw new ForbiddenError(`this operation needs scope read:${operation.type}`);
      return json(200, operationToApi(operation));
    },
  } satisfies Record<string, Route>;
}
