/** The local api's admission: at most `concurrency` requests served at once, a bounded queue, 429 past it. */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { describe, expect, test } from 'vitest';
import { admitted } from '../../../../../infra/local/aws/admission.js';

const event = (path: string) => ({ rawPath: path }) as APIGatewayProxyEventV2;
const context = {} as Context;

/** A handler whose requests stay open until released, recording what it was asked and how many ran at once. */
function heldHandler() {
  const open = new Map<string, () => void>();
  const served: string[] = [];
  let running = 0;
  let mostAtOnce = 0;
  const handler = async (request: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> => {
    served.push(request.rawPath);
    running++;
    mostAtOnce = Math.max(mostAtOnce, running);
    await new Promise<void>((resolve) => open.set(request.rawPath, resolve));
    running--;
    if (request.rawPath === '/throws') throw new Error('boom');
    return { statusCode: 200, body: request.rawPath };
  };
  const release = (path: string) => {
    open.get(path)?.();
    open.delete(path);
  };
  return { handler, served, release, mostAtOnce: () => mostAtOnce };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('admitted', () => {
  test('serves at most `concurrency` requests at once; the rest wait', async () => {
    const held = heldHandler();
    const serve = admitted(held.handler, { concurrency: 2, maxQueued: 10, retryAfterS: 1 });
    const answers = ['/a', '/b', '/c', '/d'].map((path) => serve(event(path), context));
    await settle();
    expect(held.served).toEqual(['/a', '/b']);
    expect(serve.gauge()).toEqual({ running: 2, queued: 2, refused: 0 });
    for (const path of ['/a', '/b', '/c', '/d']) {
      held.release(path);
      await settle();
    }
    expect((await Promise.all(answers)).map((answer) => answer.body)).toEqual(['/a', '/b', '/c', '/d']);
    expect(held.mostAtOnce()).toBe(2);
  });

  test('waiting requests take their turn in the order they came', async () => {
    const held = heldHandler();
    const serve = admitted(held.handler, { concurrency: 1, maxQueued: 10, retryAfterS: 1 });
    const answers = ['/first', '/second', '/third', '/fourth'].map((path) => serve(event(path), context));
    await settle();
    for (const path of ['/first', '/second', '/third', '/fourth']) {
      held.release(path);
      await settle();
    }
    await Promise.all(answers);
    expect(held.served).toEqual(['/first', '/second', '/third', '/fourth']);
  });

  test('a request past the queue is refused at once with 429 and Retry-After, and never reaches the handler', async () => {
    const held = heldHandler();
    const serve = admitted(held.handler, { concurrency: 1, maxQueued: 1, retryAfterS: 3 });
    const kept = [serve(event('/running'), context), serve(event('/queued'), context)];
    const refused = await serve(event('/refused'), context);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers).toMatchObject({ 'retry-after': '3', 'content-type': 'application/json' });
    expect(JSON.parse(refused.body ?? '')).toEqual({ message: 'Too Many Requests' });
    expect(serve.gauge()).toEqual({ running: 1, queued: 1, refused: 1 });
    held.release('/running');
    await settle();
    held.release('/queued');
    await Promise.all(kept);
    expect(held.served).toEqual(['/running', '/queued']);
  });

  test('a request that throws still frees its turn for the next', async () => {
    const held = heldHandler();
    const serve = admitted(held.handler, { concurrency: 1, maxQueued: 5, retryAfterS: 1 });
    const failing = serve(event('/throws'), context);
    const next = serve(event('/next'), context);
    await settle();
    held.release('/throws');
    await expect(failing).rejects.toThrow('boom');
    await settle();
    held.release('/next');
    expect((await next).body).toBe('/next');
    expect(serve.gauge()).toEqual({ running: 0, queued: 0, refused: 0 });
  });
});
