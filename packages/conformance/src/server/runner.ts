import { toCheckResult } from '../common/check-meta.js';
import { maxEvidence } from '../common/evidence.js';
import type { CheckResult } from '../common/report.js';
import { ConformanceError } from '../errors.js';
import type { Check } from './check.js';
import type { CheckContext } from './context.js';
import { evidenceScope, toEvidence } from './http/evidence.js';
import type { Exchange } from './http/probe.js';

export interface RunChecksOptions {
  /** How many checks run at once, default 8. */
  concurrency?: number;
  onStart?: (check: Check) => void;
  onResult?: (result: CheckResult) => void;
  /** Monotonic ms clock for durations, default performance.now. */
  now?: () => number;
}

async function runOne(check: Check, context: CheckContext, now: () => number): Promise<CheckResult> {
  const started = now();
  let status: CheckResult['status'];
  let details: string;
  const judged = new Set<Exchange>();
  try {
    const outcome = await evidenceScope.run(judged, () => check.run(context));
    status = outcome.status;
    details = outcome.details;
  } catch (error) {
    // A check that throws is "errored", with the one-line reason: never a stack trace or a secret.
    status = 'errored';
    const message = error instanceof Error ? error.message : String(error);
    details =
      error instanceof ConformanceError && error.code === 'ERR_NETWORK'
        ? `no HTTP answer: ${message}`
        : `the check could not complete: ${message}`;
  }
  // A pass that judged no exchange at all verified nothing in this run.
  if (status === 'passed' && judged.size === 0) {
    status = 'skipped';
    details = `not verified: the check judged no exchange in this run (${details})`;
  }
  const listed = [...judged].slice(0, maxEvidence);
  return toCheckResult(
    check,
    { status, details: context.redactor.redact(details) },
    {
      listed: listed.map((exchange) => toEvidence(exchange, context.redactor)),
      omitted: judged.size - listed.length,
    },
    now() - started,
  );
}

/**
 * Runs the checks: the independent ones concurrently (`concurrency` at a time), then the `final` ones,
 * which judge what the others saw. Results come back in catalogue order.
 */
export async function runChecks(
  checks: readonly Check[],
  context: CheckContext,
  options: RunChecksOptions = {},
): Promise<CheckResult[]> {
  const now = options.now ?? (() => performance.now());
  const concurrency = Math.max(1, options.concurrency ?? 8);
  const results = new Map<string, CheckResult>();
  const runPool = async (batch: readonly Check[]) => {
    let next = 0;
    const worker = async () => {
      while (next < batch.length) {
        const check = batch[next++]!;
        options.onStart?.(check);
        const result = await runOne(check, context, now);
        results.set(check.id, result);
        options.onResult?.(result);
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, batch.length) }, worker));
  };
  await runPool(checks.filter((check) => !check.final));
  await runPool(checks.filter((check) => check.final));
  return checks.map((check) => results.get(check.id)!);
}
