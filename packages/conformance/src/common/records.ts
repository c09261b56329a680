/** What a client run records of its scenario plan and its journey: read by the report model and the stage alike. */
export type ScenarioName = 'revocation' | 'throttle' | 'unavailable' | 'narrowed-grant';

export interface ScenarioRecord {
  name: ScenarioName;
  enabled: boolean;
  /** What the stage does, in words (printed in the report). */
  plan: string;
  /** When it fired (ms since start) and on which exchange; absent when the journey never reached it. */
  firedAt?: number;
  seq?: number;
}

export interface JourneyRecord {
  /** The command as given, each argument redacted. Empty when the stage only recorded. */
  command: string[];
  exitCode: number | null;
  signal: string | null;
  durationMs: number;
  /** Why it ended: exited, killed at --timeout, interrupted (Ctrl-C), the --duration ended, or could not start. */
  ending: 'exited' | 'timeout' | 'interrupted' | 'duration' | 'spawn-failed';
  /** One line when the ending needs words (the spawn error, the timeout). */
  note?: string;
  /**
   * Processes of the journey that had left its process group (setsid, a daemon) and were still running
   * when it ended: named here (pid and command line, redacted), then stopped.
   */
  survivors?: string[];
}
