import type { Coverage } from '@partner-lending/conformance';
import type { DigestedPlan } from '../plan/plan.js';

export type { Coverage };

/** The parts of a stored client report that coverage and approvability read (all untrusted: checked). */
interface StoredReport {
  coverage?: Coverage;
  operations?: Array<{ operationId: string; calls: number; successes: number }>;
  scenarios?: Array<{ name: string; enabled: boolean; firedAt?: number }>;
  notVerified?: string[];
  checks?: Array<{ id: string; severity: string; status: string }>;
  certification?: { passed: boolean; reasons: string[] };
}

/**
 * A run's coverage: the report's own `coverage` (the suite judges each scenario from the journey's
 * traffic), or, for a report of an earlier version, derived from what every report holds (operations with their successes, the scenario plan with when each step fired, the
 * must checks not verified).
 */
export function coverageOf(report: StoredReport): Coverage {
  if (report.coverage && Array.isArray(report.coverage.operations)) return report.coverage;
  return {
    operations: (report.operations ?? []).map((item) => ({
      operationId: item.operationId,
      calls: item.calls,
      succeeded: item.successes,
    })),
    scenarios: (report.scenarios ?? [])
      .filter((item) => item.enabled)
      .map((item) => ({
        id: item.name,
        met: item.firedAt !== undefined,
        ...(item.firedAt === undefined && { detail: 'the journey never reached it' }),
      })),
    mustNotVerified: [...(report.notVerified ?? [])],
  };
}

/** What decides whether a run can be approved. */
export interface ApprovableRun {
  status: string;
  certify: boolean;
  verdict: string | null;
  attestation: boolean;
  /** The plan a certification run followed (null: a practice run). */
  plan: DigestedPlan | null;
  report: StoredReport | null;
}

/**
 * Whether a reviewer may approve a partner for production on this run, and if not, every reason: a
 * certification run (not practice), judged (not interrupted), attested, passed, every operation of its
 * plan answered with success at least once, every scenario of its plan met, every must check verified,
 * and each should-check the plan makes decisive passed.
 */
export function approvability(run: ApprovableRun): { approvable: boolean; notApprovable: string[] } {
  const reasons: string[] = [];
  if (!run.certify || run.plan === null)
    reasons.push(
      'a practice run (created without "certify": true) is never approvable: create a certification run, which follows the vendor’s plan',
    );
  if (run.status === 'interrupted')
    reasons.push(
      'the run was interrupted: its deadline passed while the service was down, so it was judged on what was recorded',
    );
  else if (run.status !== 'judged') reasons.push('the run is not judged yet');
  if (run.status === 'judged' && !run.attestation) reasons.push('the run has no attestation');
  if (run.verdict !== null && run.verdict !== 'PASS') reasons.push(`the verdict is ${run.verdict}, not PASS`);
  if (run.report && run.plan) {
    const coverage = coverageOf(run.report);
    for (const wanted of run.plan.operations) {
      const done = coverage.operations.find((item) => item.operationId === wanted.operationId);
      if (!done || done.succeeded === 0)
        reasons.push(
          `operation ${wanted.operationId} (${wanted.scope}) never succeeded (${done?.calls ?? 0} calls): the plan requires at least one success`,
        );
    }
    const scenarios = [...new Set([...run.plan.scenarios, ...coverage.scenarios.map((item) => item.id)])];
    for (const wanted of scenarios) {
      const met = coverage.scenarios.find((item) => item.id === wanted);
      if (!met?.met)
        reasons.push(
          `scenario ${wanted} was not met${met?.detail ? ` (${met.detail})` : ''}: the plan requires every scenario`,
        );
    }
    if (coverage.mustNotVerified.length > 0)
      reasons.push(
        `must checks not verified: ${coverage.mustNotVerified.join(', ')} (a must that was not verified is not a pass)`,
      );
    for (const id of run.plan.decisiveShouldChecks) {
      const check = run.report.checks?.find((item) => item.id === id);
      if (check?.status !== 'passed')
        reasons.push(
          `${id} ${check ? (check.status === 'skipped' ? 'was not verified' : check.status) : 'was not judged'}: the plan makes it decide approval`,
        );
    }
  }
  // What the suite found against the plan that the reasons above do not already say.
  for (const reason of run.report?.certification?.reasons ?? [])
    if (/^(journey-not-completed|plan-digest-mismatch):/.test(reason))
      reasons.push(`certification: ${reason}`);
  return { approvable: reasons.length === 0, notApprovable: reasons };
}

/** A run's row as the reviewer pages and `decide` read it (the columns approvability needs). */
export interface RunRowForApproval {
  status: string;
  certify: boolean;
  verdict: string | null;
  attestation: string | null;
  plan: DigestedPlan | null;
  report_json: string | null;
}

/** Whether the run (its row) can be approved, and every reason it cannot (see `approvability`). */
export function approvalOf(run: RunRowForApproval) {
  return approvability({
    status: run.status === 'closing' ? 'open' : run.status,
    certify: run.certify,
    verdict: run.verdict,
    attestation: run.attestation !== null,
    plan: run.plan,
    report: run.report_json ? JSON.parse(run.report_json) : null,
  });
}
