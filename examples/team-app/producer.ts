/** Defines the job type and enqueues one job: `QUEUE_URL=... QUEUE_TOKEN=... npm run enqueue`. */
import { createClient } from 'delayed-job-queue/client';

const queue = createClient({ url: process.env.QUEUE_URL ?? 'http://localhost:3000', token: process.env.QUEUE_TOKEN ?? '' });

await queue.defineType('welcome', { target: { kind: 'handler', name: 'send_welcome' }, retry: { kind: 'custom', name: 'twice_a_minute_apart' } });
const job = await queue.enqueue('welcome', { data: { name: 'Ada' }, run_after: new Date(Date.now() + 2_000).toISOString() }, { id: 'ada' });
console.log(`enqueued ${job.type}/${job.id}, due ${job.run_after}`);
