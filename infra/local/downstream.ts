/**
 * An example downstream for `http` targets (`npm run downstream`): it verifies
 * each request's signature, then answers at once (200 with a result) or, for a
 * job whose data says `"reply": "callback"`, accepts it (202) and reports the
 * outcome later through the job's `callback_url`, which needs no API key.
 *
 *   SIGNING_SECRET=<the job type's signing_secret> DOWNSTREAM_PORT=4000 npm run downstream
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { pathToFileURL } from 'node:url';

export interface DownstreamJob {
  id: string;
  type: string;
  attempt: number;
  data: unknown;
  callback_url: string;
}

export interface DownstreamOptions {
  /** The job type's signing secret, as `PUT /v1/job-types/{name}` returned it. */
  secret: string;
  /** How long a callback job "works" before calling back, unless its data says `delay_ms`. @default 1000 */
  callbackDelayMs?: number;
  /** Told of every job that passed the signature check, and of every callback's answer. */
  onJob?: (job: DownstreamJob) => void;
  onCallback?: (job: DownstreamJob, status: number) => void;
}

const TOLERANCE_S = 300;

/** The whole check a downstream needs: HMAC-SHA256 over "<timestamp>.<raw body>", compared in constant time, timestamp fresh. */
export function signatureIsValid(secret: string, timestamp: string | undefined, signature: string | undefined, rawBody: string): boolean {
  if (!timestamp || !signature || Math.abs(Date.now() / 1000 - Number(timestamp)) > TOLERANCE_S) return false;
  const expected = Buffer.from(`v1=${createHmac('sha256', secret).update(`${timestamp}.${rawBody}`).digest('hex')}`);
  const presented = Buffer.from(signature);
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const header = (request: IncomingMessage, name: string): string | undefined => {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
};

export function createDownstream(options: DownstreamOptions): Server {
  return createServer((request, response) => {
    void (async () => {
      const rawBody = await readBody(request);
      const reply = (status: number, body: unknown): void => {
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(body));
      };
      if (!signatureIsValid(options.secret, header(request, 'x-djq-timestamp'), header(request, 'x-djq-signature'), rawBody)) {
        return reply(401, { error: 'bad or stale signature' });
      }
      const job = JSON.parse(rawBody) as DownstreamJob;
      options.onJob?.(job);
      const data = (typeof job.data === 'object' && job.data !== null ? job.data : {}) as { reply?: string; delay_ms?: number };
      if (data.reply !== 'callback') return reply(200, { result: { handled_by: 'example-downstream', data: job.data } });

      reply(202, { accepted: true });
      setTimeout(() => {
        // The token in callback_url only ever completes this attempt; the body must name it.
        fetch(job.callback_url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ status: 'succeeded', attempt: job.attempt, result: { handled_by: 'example-downstream', later: true } }),
        })
          .then((answer) => options.onCallback?.(job, answer.status))
          .catch((error: unknown) => console.error('callback failed', error));
      }, data.delay_ms ?? options.callbackDelayMs ?? 1000);
    })().catch(() => {
      if (!response.headersSent) response.writeHead(400, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: 'bad request' }));
    });
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const secret = process.env.SIGNING_SECRET;
  if (!secret) {
    console.error('SIGNING_SECRET is not set: give it the signing_secret that creating the job type returned');
    process.exit(1);
  }
  const port = Number(process.env.DOWNSTREAM_PORT ?? 4000);
  createDownstream({
    secret,
    onJob: (job) => console.log(`job ${job.type}/${job.id} attempt ${job.attempt}: signature ok`),
    onCallback: (job, status) => console.log(`job ${job.type}/${job.id}: callback answered ${status}`),
  }).listen(port, '127.0.0.1', () => console.log(`example downstream on http://127.0.0.1:${port}`));
}
