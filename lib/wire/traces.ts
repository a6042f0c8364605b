/**
 * Error traces as the API returns them. A trace is kept whole in the table (an operator with table access
 * reads it there, and the worker logs its failures), but every key that may read the job sees it: the
 * directories in its frames tell them how the server is laid out (`/var/task/...`, a home directory, a
 * deployment path). Each absolute path is cut to its file name, which with the line and column still
 * points the job type's owner at the code.
 */
import type { AttemptError } from '../domain/job.js';

/**
 * The directories of an absolute path, POSIX (`/var/task/`), `file://` or Windows (`C:\app\`), that do not
 * follow a word character, a colon or a slash: so a URL's path (`https://host/a/b`) and Node's own
 * `node:internal/...` frames stay as they are.
 */
const ABSOLUTE_DIRECTORIES = /(?<![\w.:/\\-])(?:file:\/\/)?(?:[A-Za-z]:)?[/\\](?:[^\s'"()<>/\\:]+[/\\])+/g;

export function traceWithoutPaths(trace: string): string {
  return trace.replace(ABSOLUTE_DIRECTORIES, '');
}

export function attemptErrorToApi(error: AttemptError): AttemptError {
  return error.trace === undefined ? error : { ...error, trace: traceWithoutPaths(error.trace) };
}
