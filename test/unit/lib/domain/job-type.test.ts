/** What a job type says of its own jobs: whether pollers claim them, and what may travel in a worker batch (lib/domain/job-type.ts). */
import { expect, test } from 'vitest';
import { claimsJobs, withoutSecrets } from '../../../../lib/domain/job-type.js';
import { jobTypeWith } from '../../../support/jobs.js';

test('pollers claim the jobs of a running type, limited or not', () => {
  expect(claimsJobs({ concurrency: null, paused: false })).toBe(true);
  expect(claimsJobs({ concurrency: 1, paused: false })).toBe(true);
});

test('pollers claim none of the jobs of a paused type, whatever its concurrency', () => {
  expect(claimsJobs({ concurrency: 5, paused: true })).toBe(false);
});

test('pollers claim none of the jobs of a type of concurrency 0', () => {
  expect(claimsJobs({ concurrency: 0, paused: false })).toBe(false);
});

test("a type in a worker batch leaves its signing secret behind, and keeps all else", () => {
  const jobType = jobTypeWith({
    name: 't',
    attempts: 1,
    target: { kind: 'http', url: 'https://example.com/', requestTimeoutS: 10, allowLinkLocal: false },
    signingSecret: 'whsec_x',
  });
  const { signingSecret: _secret, ...rest } = jobType;
  expect(withoutSecrets(jobType)).toStrictEqual(rest);
});
