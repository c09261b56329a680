/** The JSON report of `partner-conformance` (DESIGN.md contract), versioned by `schemaVersion`. */
export type Severity = 'must' | 'should';
export type CheckStatus = 'passed' | 'failed' | 'skipped' | 'errored';

export interface CheckResult {
  id: string;
  title: string;
  category: string;
  severity: Severity;
  status: CheckStatus;
  /** The rule the check enforces, e.g. "RFC 6750 §3.1" or "seed §4.1 rule 2". */
  reference: string;
  /** What was expected and what came back; never a secret or a whole token. */
  details: string;
  durationMs: number;
}

export interface Report {
  schemaVersion: 1;
  tool: { name: string; version: string };
  target: { authUrl: string; baseUrl: string; audience: string };
  startedAt: string;
  durationMs: number;
  summary: Record<'passed' | 'failed' | 'skipped' | 'errored', number>;
  checks: CheckResult[];
}

/** Counts the checks by status. */
export function summarize(checks: readonly CheckResult[]): Report['summary'] {
  const summary = { passed: 0, failed: 0, skipped: 0, errored: 0 };
  for (const check of checks) summary[check.status] += 1;
  return summary;
}

/** The exit code of the contract: 1 when a `must` check failed or errored, else 0. */
export function exitCodeFor(checks: readonly CheckResult[]): 0 | 1 {
  return checks.some((c) => c.severity === 'must' && (c.status === 'failed' || c.status === 'errored'))
    ? 1
    : 0;
}
