import { REQUEST_PATH_DYNAMODB_CALL_LIMITS } from '../../lib/domain/limits.js';
import { queueFromEnvironment, targetAddressPolicyFromEnvironment } from '../shared/environment.js';
import { HANDLER_NAMES } from '../shared/handler-names.js';
import { retryPolicies } from '../shared/retry-policies.js';
import { createApiHandler } from './app.js';

// The api checks only that a handler name exists, so names stand in for the handlers.
const handlers = Object.fromEntries(HANDLER_NAMES.map((name) => [name, name]));

export const handler = createApiHandler({
  ctx: queueFromEnvironment(process.env, { callLimits: REQUEST_PATH_DYNAMODB_CALL_LIMITS }),
  registry: { handlers, retryPolicies },
  targetAddressPolicy: targetAddressPolicyFromEnvironment(),
});
