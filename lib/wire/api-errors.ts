/** The body of every error the api answers, as a schema, so the API's description says what clients get. */
import { z } from 'zod';

export const apiErrorSchema = z
  .object({
    error: z.object({
      code: z.string().meta({ examples: ['invalid_request', 'not_found', 'conflict'] }),
      message: z.string(),
      details: z.array(z.object({ field: z.string(), message: z.string() })).meta({ description: 'Each field that is wrong, named from the body root' }),
      request_id: z.string().nullable(),
    }),
  })
  .meta({ id: 'Error' });
