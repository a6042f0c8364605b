import { defineConfig } from 'vitest/config';

// The test run StrykerJS repeats once per mutant (`npm run test:mutation`, stryker.config.mjs): the unit tests
// only. The integration project starts DynamoDB Local and takes minutes; a mutant of lib/domain/ is caught, or
// not, by the unit tests. The three CDK files below synthesize whole stacks (three minutes of the unit run's
// four) and test the construct rather than the rules; they stay out so that a run stays within minutes. So does
// lambda-timeout.test.ts, which races the local runtime's 20 ms deadlines on the real clock: under instrumentation
// on a loaded machine it failed the dry run, and it tests no rule of lib/domain/.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts'],
    exclude: [
      'test/unit/infra/queue-stack.test.ts',
      'test/unit/infra/settings.cdk-context.test.ts',
      'test/unit/infra/delayed-job-queue.test.ts',
      'test/unit/infra/local/aws/lambda-timeout.test.ts',
    ],
    // Instrumented code on a shared 2-core machine runs a few times slower: vitest's 5 s default would fail
    // the slowest schedule tests in the dry run. Stryker's own timeout per mutant is separate (timeoutMS).
    testTimeout: 30_000,
  },
});
