import { defineConfig } from 'vitest/config';

// Lambda runs Node 22; these machines run 20, and the SDK's reminder of that would drown the test output.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

export default defineConfig({
  test: {
    // Vitest's default on 2 cores is one worker, file after file; the integration files mostly wait on
    // DynamoDB Local and on their clocks, so two at a time take 7.4 minutes (1 450 tests) where one took 8.6 for 1 252.
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'] },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts', 'test/faults/**/*.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
          setupFiles: ['test/support/iam-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
