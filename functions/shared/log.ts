/**
 * Structured logs through the Powertools logger: one JSON object per line, so
 * CloudWatch Logs Insights and a terminal both read it. In Lambda each line also
 * carries the function's name and request id; locally the same lines go to the console.
 */
import { Logger } from '@aws-lambda-powertools/logger';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

const logger = new Logger({
  serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'delayed-job-queue',
  // DEBUG=1 keeps working as it did before Powertools; POWERTOOLS_LOG_LEVEL decides otherwise.
  ...(process.env.DEBUG ? { logLevel: 'DEBUG' as const } : {}),
});

export function log(level: LogLevel, message: string, fields: Record<string, unknown> = {}): void {
  logger[level](message, fields);
}
