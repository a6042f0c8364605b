/**
 * The `lambda` target: a synchronous invoke with the job as the payload. What
 * the function returns is the job's result; a function error (it threw, timed
 * out or ran out of memory) fails the attempt with the error's type and message.
 */
import { invokeFunction, type InvokeResponse, type LambdaClient } from '../aws/lambda.js';
import { MAX_RESULT_BYTES } from '../domain/job.js';
import { ownEntry } from '../domain/own.js';
import { failed, jobEnvelope, type TargetOutcome, type TargetRun } from './target.js';

/** Errors retrying cannot fix: the function or its input is wrong. */
const PERMANENT_INVOKE_ERRORS = new Set(['ResourceNotFoundException', 'InvalidRequestContentException', 'RequestTooLargeException']);

function parsePayload(payload: Uint8Array | undefined): unknown {
  const text = payload ? Buffer.from(payload).toString('utf8') : '';
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

const field = (value: unknown, name: string): unknown =>
  typeof value === 'object' && value !== null ? ownEntry(value as Record<string, unknown>, name) : undefined;

export async function runLambdaTarget(run: TargetRun, target: { functionName: string }, client: LambdaClient): Promise<TargetOutcome> {
  let response: InvokeResponse;
  try {
    response = await invokeFunction(client, target.functionName, jobEnvelope(run.job, run.traceparent), run.signal);
  } catch (error) {
    const name = error instanceof Error ? error.name : 'InvokeError';
    const message = error instanceof Error ? error.message : String(error);
    return failed(name, `invoking ${target.functionName}: ${message}`, { retryable: !PERMANENT_INVOKE_ERRORS.has(name) });
  }
  if (response.payload && response.payload.length > MAX_RESULT_BYTES + 1024 && !response.functionError) {
    return failed('ResultTooLargeError', `the function returned ${response.payload.length} bytes`, { retryable: false });
  }
  const payload = parsePayload(response.payload);
  if (response.functionError) {
    const errorType = field(payload, 'errorType');
    const errorMessage = field(payload, 'errorMessage');
    const trace = field(payload, 'trace') ?? field(payload, 'stackTrace');
    return {
      kind: 'failed',
      failure: {
        error: {
          class: typeof errorType === 'string' ? errorType : response.functionError,
          message: typeof errorMessage === 'string' ? errorMessage : `the function failed (${response.functionError})`,
          ...(Array.isArray(trace) ? { trace: trace.map(String).join('\n') } : {}),
        },
        retryable: true,
      },
    };
  }
  return payload === undefined ? { kind: 'succeeded' } : { kind: 'succeeded', result: payload };
}
