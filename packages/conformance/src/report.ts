import type { Evidence } from './evidence.js';

/** The JSON report of `partner-conformance`, versioned by `schemaVersion`. */
export type Severity = 'must' | 'should';
export type CheckStatus = 'passed' | 'failed' | 'skipped' | 'errored';

export type { Evidence } from './evidence.js';

export interface CheckResult {
  id: string;
  title: string;
  category: string;
  severity: Severity;
  status: CheckStatus;
  /** The rule the check enforces, e.g. "RFC 6750 §3.1" or "API documentation §4.1 rule 2". */
  reference: string;
  /** The cited sentence whose normative word sets the severity (schemaVersion 2). */
  citation: string;
  /** What must hold before a pass counts; a skipped check's details say which part did not (schemaVersion 2). */
  precondition: string;
  /** What was expected and what came back; never a secret or a whole token. */
  details: string;
  /** The exchanges the check judged, redacted, in order (schemaVersion 2). */
  evidence: Evidence[];
  /** Exchanges judged beyond the ones listed in `evidence`. */
  evidenceOmitted: number;
  durationMs: number;
}

export interface Report {
  schemaVersion: 2;
  tool: { name: string; version: string };
  target: { authUrl: string; baseUrl: string; audience: string };
  /** The bundled spec the run judged against: its SHA-256 (hex). */
  spec: { sha256: string };
  /** `certify`: a skipped `must` check fails the run. */
  mode: 'default' | 'certify';
  /** Whether create endpoints got requests with a body, and what those may have created. */
  writes: { allowed: boolean; mayHaveCreated: string[] };
  startedAt: string;
  durationMs: number;
  summary: Record<'passed' | 'failed' | 'skipped' | 'errored', number>;
  /** Ids of the `must` checks that were skipped: rules this run did not verify. */
  notVerified: string[];
  checks: CheckResult[];
}

/** Counts the checks by status. */
export function summarize(checks: readonly CheckResult[]): Report['summary'] {
  const summary = { passed: 0, failed: 0, skipped: 0, errored: 0 };
  for (const check of checks) summary[check.status] += 1;
  return summary;
}

/** The `must` checks that did not run to a verdict (skipped). */
export function mustNotVerified(
  checks: readonly Pick<CheckResult, 'id' | 'severity' | 'status'>[],
): string[] {
  return checks.filter((c) => c.severity === 'must' && c.status === 'skipped').map((c) => c.id);
}

/**
 * The exit code of the contract: 1 when a `must` check failed or errored (or, with `certify`, was
 * skipped), else 0.
 */
export function exitCodeFor(
  checks: readonly Pick<CheckResult, 'id' | 'severity' | 'status'>[],
  options: { certify?: boolean } = {},
): 0 | 1 {
  const bad = checks.some((c) => c.severity === 'must' && (c.status === 'failed' || c.status === 'errored'));
  if (bad) return 1;
  return options.certify && mustNotVerified(checks).length > 0 ? 1 : 0;
}

/** The one-line verdict every reporter prints. */
export function verdictOf(
  checks: readonly Pick<CheckResult, 'id' | 'severity' | 'status'>[],
  options: { certify?: boolean } = {},
): { code: 0 | 1; word: 'PASS' | 'FAIL'; text: string } {
  const code = exitCodeFor(checks, options);
  const failedMust = checks.filter(
    (c) => c.severity === 'must' && (c.status === 'failed' || c.status === 'errored'),
  );
  const skippedMust = mustNotVerified(checks);
  const notVerified = `${skippedMust.length} must check${skippedMust.length === 1 ? '' : 's'} not verified: ${skippedMust.join(', ')}`;
  if (failedMust.length > 0)
    return {
      code,
      word: 'FAIL',
      text: `FAIL — ${failedMust.length} must check${failedMust.length === 1 ? '' : 's'} failed or errored: ${failedMust.map((c) => c.id).join(', ')}${skippedMust.length > 0 ? `; ${notVerified}` : ''}`,
    };
  if (skippedMust.length > 0)
    return options.certify
      ? { code, word: 'FAIL', text: `FAIL — certification needs every must check verified; ${notVerified}` }
      : { code, word: 'PASS', text: `PASS — ${notVerified}` };
  return { code, word: 'PASS', text: 'PASS — every must check passed' };
}
