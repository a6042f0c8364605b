/**
 * Holds the api's answers to its OpenAPI document, as a client reading only the document would: the body is
 * validated against the JSON Schema the document gives the operation and status (draft 2020-12, as OpenAPI
 * 3.1 has it), with its formats checked.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { openApiDocument } from '../../functions/api/openapi.js';
import type { Operation } from '../../functions/api/operations.js';

const DOCUMENT_ID = 'openapi.json';

/** A JSON pointer's segments escaped as RFC 6901 says, then as a URI fragment. */
const pointer = (segments: string[]): string => segments.map((segment) => encodeURIComponent(segment.replaceAll('~', '~0').replaceAll('/', '~1'))).join('/');

/**
 * Returns a check of one answer: the ways its body differs from what the document says the operation answers
 * with that status (none when it conforms; an undocumented status is one).
 */
export function documentedAnswers(document: Record<string, unknown> = openApiDocument()) {
  const ajv = new Ajv2020({ allErrors: true });
  addFormats.default(ajv);
  // The document's own fields are not JSON Schema: declared so that strict mode takes the document as a whole.
  ajv.addVocabulary(['openapi', 'info', 'paths', 'components']);
  ajv.addSchema(document, DOCUMENT_ID);
  return (operation: Pick<Operation, 'method' | 'path'>, answer: { status: number; body: unknown }): string[] => {
    const where = ['paths', operation.path, operation.method.toLowerCase(), 'responses', String(answer.status), 'content', 'application/json', 'schema'];
    const validate = ajv.getSchema(`${DOCUMENT_ID}#/${pointer(where)}`);
    if (!validate) return [`${operation.method} ${operation.path} does not document a ${answer.status} answer`];
    if (validate(answer.body)) return [];
    return (validate.errors ?? []).map((error) => `${error.instancePath || '(body)'} ${error.message ?? ''} ${JSON.stringify(error.params)}`);
  };
}
