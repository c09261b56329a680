import type { Coverage } from '@partner-lending/conformance';
import type { DigestedPlan } from '../plan/plan.js';

export type { Coverage };

/** The parts of a stored client report that coverage and approvability read (all untrusted: checked). */
interface StoredReport {
  coverage?: Coverage;
  operations?: Array<{ operationId: string; calls: number; successes: number }>;
  scenarios?: Array<{ name: string; enabled: boolean; firedAt?: number }>;
  notVerified?: string[];
  checks?: Array<{ id: string; severity: string; status: string; details?: string }>;
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
  if (run.report && run.plan) reasons.push(...planReasons(run.report, run.plan));
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

/** The first line of a check's details, bounded, for a one-line reason. */
const firstLine = (text: string | undefined) => (text ?? '').split('\n')[0]!.slice(0, 300);

/**
 * What the plan finds missing in a judged report, every reason named: the suite's own certification
 * reasons (`<code>: <subject> — <detail>`, the strings its report and `verify` show: each failed must
 * and decisive check by id with its detail, each coverage gap, each scenario not handled or not
 * verified), then anything the plan requires that those do not name — a report of an earlier version
 * has no such reasons, and what a report says of itself is checked, never trusted alone.
 */
function planReasons(report: StoredReport, plan: DigestedPlan): string[] {
  const judged = Array.isArray(report.certification?.reasons)
    ? report.certification.reasons.filter((item): item is string => typeof item === 'string').map(firstLine)
    : [];
  const reasons = [...judged];
  const named = (id: string) => judged.some((reason) => reason.includes(id));
  const add = (id: string, reason: string) => {
    if (!named(id)) reasons.push(reason);
  };
  const coverage = coverageOf(report);
  for (const check of report.checks ?? [])
    if (check.severity === 'must' && (check.status === 'failed' || check.status === 'errored'))
      add(check.id, `must-failed: ${check.id} — ${firstLine(check.details)}`);
  for (const wanted of plan.operations) {
    const done = coverage.operations.find((item) => item.operationId === wanted.operationId);
    if (!done || done.succeeded === 0)
      add(
        wanted.operationId,
        `operation-not-succeeded: ${wanted.operationId} (${wanted.scope}) — ${done?.calls ?? 0} calls, none succeeded: the plan requires at least one success`,
      );
  }
  for (const wanted of [...new Set([...plan.scenarios, ...coverage.scenarios.map((item) => item.id)])]) {
    const scenario = coverage.scenarios.find((item) => item.id === wanted);
    if (
      !scenario?.met &&
      !judged.some((reason) => new RegExp(`^scenario-not-[a-z]+: ${wanted}\\b`).test(reason))
    )
      reasons.push(
        `${scenario?.outcome === 'not-verified' ? 'scenario-not-verified' : scenario?.played ? 'scenario-not-handled' : 'scenario-not-met'}: ${wanted} — ${firstLine(scenario?.detail) || 'not in the report'}: the plan requires every scenario handled`,
      );
  }
  for (const id of coverage.mustNotVerified)
    add(id, `must-not-verified: ${id} — a must that was not verified is not a pass`);
  for (const id of plan.decisiveShouldChecks) {
    const check = report.checks?.find((item) => item.id === id);
    if (check?.status !== 'passed')
      add(
        id,
        `${check && check.status !== 'skipped' ? 'decisive-check-failed' : 'decisive-check-not-verified'}: ${id} — ${check ? firstLine(check.details) || check.status : 'not judged'}: the plan makes it decide approval`,
      );
  }
  return reasons;
}
