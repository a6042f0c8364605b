/** The state of one of the stack's CloudWatch alarms, as CloudWatch gives it and the dashboard shows it. */
export const ALARM_STATES = ['OK', 'ALARM', 'INSUFFICIENT_DATA'] as const;
export type AlarmState = (typeof ALARM_STATES)[number];

export interface AlarmStatus {
  /** The alarm's id in the stack (`DueLagAlarm`, ...). */
  name: string;
  state: AlarmState;
  /** Why it went into its state, at its last change. */
  reason: string;
  /** When it last changed state; its creation, while it has not. */
  changedAtMs: number;
}
