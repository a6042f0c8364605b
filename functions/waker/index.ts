import { queueFromEnvironment, wakerFromEnvironment, wakeTimersFromEnvironment } from '../shared/environment.js';
import { createWakerHandler } from './app.js';

export const handler = createWakerHandler({ ctx: queueFromEnvironment(process.env, { waker: wakerFromEnvironment() }), timers: wakeTimersFromEnvironment() });
