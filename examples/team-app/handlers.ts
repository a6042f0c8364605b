/** The team's handler module: the queue's worker runs these, by the name a job type's target gives. */
import { NonRetryableError, type HandlerModule } from 'delayed-job-queue/handlers';

export const handlers: HandlerModule['handlers'] = {
  /** Writes the welcome text for `data.name`; a job without one can never succeed, so it fails at once. */
  send_welcome: (data) => {
    const name = typeof data === 'object' && data !== null && 'name' in data ? String(data.name) : '';
    if (!name) throw new NonRetryableError('send_welcome needs data.name');
    return { text: `Welcome aboard, ${name}!` };
  },
};

export const retryPolicies: HandlerModule['retryPolicies'] = {
  /** Two more tries, a minute apart, whatever failed. */
  twice_a_minute_apart: ({ attempt }) => (attempt < 3 ? { retry: true, delayMs: 60_000 } : { retry: false }),
};
