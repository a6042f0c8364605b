/** The dashboard bundle the api serves is committed; it must be what dashboard/ builds to today. */
import { readFile } from 'node:fs/promises';
import { expect, test } from 'vitest';
import { buildDashboardAssets, GENERATED_MODULE, generatedModule } from '../../../dashboard/build.js';

test('the committed dashboard bundle is up to date with dashboard/ (else run npm run build:dashboard)', async () => {
  const committed = await readFile(GENERATED_MODULE, 'utf8');
  expect(committed === generatedModule(await buildDashboardAssets()), 'functions/api/dashboard-assets.generated.ts is stale: run npm run build:dashboard').toBe(true);
}, 30_000);
