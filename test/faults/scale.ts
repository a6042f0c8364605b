/** `npm test` runs the fault suite small; `npm run test:faults` sets FAULTS_SCALE=full for the figures in docs/concepts/reliability.md. */
export const FULL = process.env.FAULTS_SCALE === 'full';
export const scaled = (small: number, full: number): number => (FULL ? full : small);
