/** One JSON object per line, so CloudWatch Logs Insights and a terminal both read it. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

function serialise(value: unknown): unknown {
  if (value instanceof Error) return { name: value.name, message: value.message, stack: value.stack };
  return value;
}

export function log(level: LogLevel, message: string, fields: Record<string, unknown> = {}): void {
  if (level === 'debug' && !process.env.DEBUG) return;
  const line = { level, message, time: new Date().toISOString(), ...Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, serialise(v)])) };
  (level === 'error' || level === 'warn' ? console.error : console.log)(JSON.stringify(line));
}
