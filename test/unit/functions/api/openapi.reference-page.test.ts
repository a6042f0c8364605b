/** docs/reference/operations.md is written from the OpenAPI document; it must list what the api serves today. */
import { readFile } from 'node:fs/promises';
import { expect, test } from 'vitest';
import { API_REFERENCE_PAGE, apiReferencePage } from '../../../support/api-reference.js';

test('docs/reference/operations.md is up to date with the OpenAPI document (else run npx tsx test/support/api-reference.ts)', async () => {
  const committed = await readFile(API_REFERENCE_PAGE, 'utf8');
  expect(committed === apiReferencePage(), 'docs/reference/operations.md is stale: run npx tsx test/support/api-reference.ts').toBe(true);
});

test('the page has a section for every operation, named by method and path', async () => {
  const page = apiReferencePage();
  expect(page).toContain('## `PUT /v1/jobs/{type}/{id}`');
  expect(page).toContain('## `GET /openapi.json`');
  expect(page.match(/^## `/gm)?.length).toBeGreaterThan(30);
});
