/**
 * docs/reference/operations.md, written from the OpenAPI document the api serves (functions/api/openapi.ts), so
 * the page lists exactly the operations, scopes, parameters and answers the code has. test/unit/functions/api/openapi.reference-page.test.ts
 * fails when the page is stale; `npx tsx test/support/api-reference.ts` writes it again.
 */
import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Access } from '../../functions/api/access.js';
import { openApiDocument } from '../../functions/api/openapi.js';
import { OPERATIONS, type Operation } from '../../functions/api/operations.js';

export const API_REFERENCE_PAGE = resolve(import.meta.dirname, '../../docs/reference/operations.md');

type JsonSchema = {
  $ref?: string;
  type?: string | string[];
  pattern?: string;
  anyOf?: JsonSchema[];
  items?: JsonSchema;
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
};
type Parameter = { name: string; in: string; required: boolean; description?: string; schema: JsonSchema };
type Described = {
  parameters: Parameter[];
  requestBody?: { content: { 'application/json': { schema: JsonSchema } } };
  responses: Record<string, { description: string; content: { 'application/json': { schema: JsonSchema } } }>;
};

function who(access: Access): string {
  switch (access.kind) {
    case 'public':
      return 'no key';
    case 'admin':
      return '`admin`';
    case 'any_type':
      return `any \`${access.action}:\` scope; the answer holds only the key's types`;
    case 'type':
      return `\`${access.action}:<${access.param}>\``;
    case 'callback':
      return '`callback:<type>`, or the callback token of the job’s `callback_url`';
  }
}

/** A schema in a few words: the component it names, an object's fields (`?` when optional), or its type. */
function schemaName(schema: JsonSchema): string {
  if (schema.$ref) return `\`${schema.$ref.split('/').pop()}\``;
  if (schema.properties) {
    const fields = Object.keys(schema.properties).map((name) => (schema.required?.includes(name) ? name : `${name}?`));
    return `\`{${fields.join(', ')}}\``;
  }
  if (schema.anyOf) return schema.anyOf.map(schemaName).join(' or ');
  if (schema.enum) return schema.enum.map((value) => `\`${JSON.stringify(value)}\``).join(', ');
  if (schema.type === 'array' && schema.items) return `array of ${schemaName(schema.items)}`;
  return Array.isArray(schema.type) ? schema.type.join(' or ') : (schema.type ?? 'any JSON');
}

function parameterLine(parameter: Parameter): string {
  const pattern = parameter.schema.pattern ? `, \`${parameter.schema.pattern}\`` : '';
  const required = parameter.required ? '' : ', optional';
  return `\`${parameter.name}\` (${parameter.in}${required}${pattern})`;
}

function section(operation: Operation, described: Described): string[] {
  const lines = [`## \`${operation.method} ${operation.path}\``, '', `${operation.summary}.`, '', `- **Key**: ${who(operation.access)}.`];
  if (described.parameters.length > 0) lines.push(`- **Parameters**: ${described.parameters.map(parameterLine).join('; ')}.`);
  if (described.requestBody) lines.push(`- **Body**: ${schemaName(described.requestBody.content['application/json'].schema)}.`);
  const statuses = Object.entries(described.responses);
  const successes = statuses.filter(([status]) => status.startsWith('2'));
  lines.push(`- **Answers**: ${successes.map(([status, answer]) => `${status} ${schemaName(answer.content['application/json'].schema)}`).join('; ')}.`);
  lines.push(`- **Errors**: ${statuses.filter(([status]) => !status.startsWith('2')).map(([status]) => status).join(', ')}.`);
  return [...lines, ''];
}

export function apiReferencePage(): string {
  const document = openApiDocument() as { paths: Record<string, Record<string, Described>> };
  const header = [
    '# HTTP API operations',
    '',
    '<!-- Written by `npx tsx test/support/api-reference.ts` from the OpenAPI document; edit the operations, not this page. -->',
    '',
    'Every operation of the API, in the order of `functions/api/operations.ts`, from the same OpenAPI 3.1',
    'document `GET /openapi.json` serves: the scope a key needs (`admin` covers every route), the path and query',
    'parameters with their patterns, the body and answers by their schema names under `components.schemas`,',
    'and the error statuses. Bodies, errors and statuses are described in [HTTP API](http-api.md); sizes in',
    '[Limits](limits.md).',
    '',
  ];
  const sections = OPERATIONS.flatMap((operation) => section(operation, document.paths[operation.path]![operation.method.toLowerCase()]!));
  return [...header, ...sections].join('\n').trimEnd() + '\n';
}

if (process.argv[1] === import.meta.filename) await writeFile(API_REFERENCE_PAGE, apiReferencePage());
