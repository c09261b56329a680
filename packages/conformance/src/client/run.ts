import type { ClientReport } from '../common/report.js';
import { resolveCommand, runJourney } from './journey.js';
import { type JudgeOptions, judgeSession } from './judge.js';
import type { ClientSession, JourneyRecord, ScenarioName } from './session.js';
import { type RunningStage, type StageOptions, startStage } from './stage.js';

export interface ClientConformanceOptions extends StageOptions {
  /** The partner's journey: a command and its arguments. Without it the stage records until `durationSeconds` or `signal`. */
  command?: readonly string[];
  /** Longest the journey may run, in seconds; then its process group is stopped. Default 600. */
  timeoutSeconds?: number;
  /** Without a command: how long to record, in seconds. Default: until `signal` aborts. */
  durationSeconds?: number;
  /**
   * A skipped `must` check, or a journey that does not exit 0, fails the run. With `plan` (what
   * `--certify` passes: `certificationPlan`) the run also passes only when every operation of the plan
   * succeeded, every scenario of it was met and its decisive `should` checks passed.
   */
  certify?: boolean;
  /** Check ids to judge. Default all. */
  only?: readonly string[];
  /** The environment the journey inherits (the PARTNER_* variables of the stage are added). Default process.env. */
  env?: Record<string, string | undefined>;
  /** Aborting stops the journey (or the recording) and judges what was seen (Ctrl-C). */
  signal?: AbortSignal;
  /** Where the journey's output goes. Default 'inherit'. */
  stdio?: 'inherit' | 'ignore' | 'pipe';
  onOutput?: (chunk: Buffer) => void;
  /** Called once the stage listens, before the journey starts. */
  onStage?: (stage: RunningStage) => void;
}

export interface ClientConformanceRun {
  report: ClientReport;
  session: ClientSession;
}

export const defaultTimeoutSeconds = 600;

/**
 * Certifies a partner's integration: starts the certification stage, runs the journey against it, and
 * judges the recorded traffic with the client catalogue.
 */
export async function runClientConformance(
  options: ClientConformanceOptions = {},
): Promise<ClientConformanceRun> {
  const env = options.env ?? process.env;
  const command = options.command ?? [];
  // A command that cannot run is a usage error (exit 2), found before anything starts.
  if (command.length > 0) resolveCommand(command[0]!, env);
  const stage = await startStage(options);
  let journey: JourneyRecord;
  try {
    options.onStage?.(stage);
    if (command.length > 0) {
      journey = await runJourney({
        command,
        env: { ...env, ...stage.env() },
        timeoutMs: (options.timeoutSeconds ?? defaultTimeoutSeconds) * 1000,
        ...(options.signal && { signal: options.signal }),
        stdio: options.stdio ?? 'inherit',
        ...(options.onOutput && { onOutput: options.onOutput }),
      });
    } else {
      journey = await record(options.durationSeconds, options.signal);
    }
    // Answers still being written when the journey ended are recorded before the session closes.
    await new Promise((resolve) => setTimeout(resolve, 20));
  } catch (error) {
    await stage.close();
    throw error;
  }
  const session = stage.session(journey);
  await stage.close();
  const judgeOptions: JudgeOptions = {
    certify: options.certify === true,
    ...(options.only && { only: options.only }),
    ...(options.plan && { plan: options.plan }),
  };
  return { report: judgeSession(session, judgeOptions), session };
}

function record(
  durationSeconds: number | undefined,
  signal: AbortSignal | undefined,
): Promise<JourneyRecord> {
  const started = performance.now();
  return new Promise((resolve) => {
    const done = (ending: JourneyRecord['ending']) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve({
        command: [],
        exitCode: null,
        signal: null,
        durationMs: Math.round(performance.now() - started),
        ending,
      });
    };
    const onAbort = () => done('interrupted');
    const timer =
      durationSeconds === undefined ? undefined : setTimeout(() => done('duration'), durationSeconds * 1000);
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    if (timer === undefined && signal === undefined) done('duration');
  });
}

export type { ScenarioName };
