/**
 * Structured logs through the Powertools logger: one JSON object per line, so
 * CloudWatch Logs Insights and a terminal both read it. `service` is the
 * function (POWERTOOLS_SERVICE_NAME).
 */
import { Logger, LogItem, LogLevelThreshold } from '@aws-lambda-powertools/logger';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/**
 * In Lambda, Powertools writes to stdout through its own console, past the
 * runtime's line prefixes. Elsewhere the same lines go through the global
 * console, as they did before Powertools: warnings and errors to stderr, and
 * a test can watch them.
 */
class ConsoleLogger extends Logger {
  protected override printLog(logLevel: number, item: LogItem): void {
    item.prepareForPrint();
    const line = JSON.stringify(item.getAttributes(), this.getJsonReplacer());
    (logLevel >= LogLevelThreshold.WARN ? console.error : console.log)(line);
    for (const listener of lineListeners) listener(line);
  }
}

const lineListeners = new Set<(line: string) => void>();

/**
 * Hears every line written outside Lambda, as written: the local runtime counts the bytes each function's lines
 * would put into CloudWatch Logs. Deployed, CloudWatch Logs counts them itself. Returns the way to stop hearing.
 */
export function onLogLine(listener: (line: string) => void): () => void {
  lineListeners.add(listener);
  return () => lineListeners.delete(listener);
}

const inLambda = process.env.AWS_LAMBDA_FUNCTION_NAME !== undefined;
const options = {
  serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'delayed-job-queue',
  // DEBUG=1 keeps working as it did before Powertools; POWERTOOLS_LOG_LEVEL decides otherwise.
  ...(process.env.DEBUG ? { logLevel: 'DEBUG' as const } : {}),
};
const logger = inLambda ? new Logger(options) : new ConsoleLogger(options);

export function log(level: LogLevel, message: string, fields: Record<string, unknown> = {}): void {
  logger[level](message, fields);
}
