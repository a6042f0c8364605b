// `npm run test:mutation`: StrykerJS mutates the pure rules of lib/domain/ and runs the unit tests against each
// mutant (docs/concepts/reliability.md, "Mutation testing"). Not part of `npm test` nor of CI: a full run takes
// tens of minutes. While working on one file: `npm run test:mutation -- --mutate lib/domain/slots.ts`.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  packageManager: 'npm',
  testRunner: 'vitest',
  // The unit tests only, without the CDK synth tests (see the file).
  vitest: { configFile: 'vitest.mutation.config.ts' },
  mutate: ['lib/domain/**/*.ts'],
  // Each mutant runs only the tests that reached it in the dry run.
  coverageAnalysis: 'perTest',
  // A 2-core machine, shared: one test process besides Stryker's own.
  concurrency: 1,
  // A mutant of a module-level constant is "static": reached while the test files load, so every test must run
  // for it (one took 2 of a file's 2.3 minutes). They are left out of the run and of the score.
  ignoreStatic: true,
  // A rerun tests only the mutants whose code or covering tests changed since the last run.
  incremental: true,
  incrementalFile: 'reports/stryker-incremental.json',
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  // Local data and build output have no place in Stryker's sandbox copy.
  // Stryker would rewrite tsconfig.json's `extends` and `references` for its sandbox through TypeScript's JS API,
  // which TypeScript 7 no longer has; ours has neither, so it names no file and Stryker leaves it alone.
  tsconfigFile: '',
  ignorePatterns: ['.data', 'cdk.out', 'dist', 'bench/results', 'test/artifacts', 'reports'],
  thresholds: { high: 90, low: 85, break: null },
};
