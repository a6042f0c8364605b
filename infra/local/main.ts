/** `npm start`: runs the queue locally, with the built-in handlers, until Ctrl-C. */
import { serveUntilStopped } from './serve.js';

await serveUntilStopped(process.env);
