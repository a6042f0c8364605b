/** The bodies of the api's error answers, as schemas, so the API's description says what clients get. */
import { z } from 'zod';

export const apiErrorSchema = z
  .strictObject({
    error: z.strictObject({
      code: z.string().meta({ examples: ['invalid_request', 'not_found', 'conflict'] }),
      message: z.string(),
      details: z.array(z.strictObject({ field: z.string(), message: z.string() })).meta({ description: 'Each field that is wrong, named from the body root' }),
      request_id: z.string().nullable(),
    }),
  })
  .meta({ id: 'Error' });

/** API Gateway's own answer when it refuses a key (401 without one, 403 for one it does not know): the request never reached the api. */
export const gatewayRefusalSchema = z.strictObject({ message: z.string() }).meta({ id: 'GatewayRefusal' });
