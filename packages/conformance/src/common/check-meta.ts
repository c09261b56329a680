import type { CheckResult, CheckStatus, Evidence, Severity } from './report.js';

/** The categories of the server catalogue, in report order. */
export const categories = [
  'token-endpoint',
  'scope-intersection',
  'audience',
  'bearer-header',
  'token-integrity',
  'scope-enforcement',
  'partner-isolation',
  'spec-conformance',
] as const;
export type Category = (typeof categories)[number];

/** The categories of the client catalogue, in report order. */
export const clientCategories = [
  'client-credentials',
  'client-token-lifecycle',
  'client-resilience',
  'client-scope',
  'client-requests',
] as const;
export type ClientCategory = (typeof clientCategories)[number];

/** The category order of a report of either mode: every reporter sorts by it. */
export const categoryOrder = (mode: 'server' | 'client'): readonly string[] =>
  mode === 'client' ? clientCategories : categories;

/**
 * What every check of either catalogue says of itself: a stable id, the rule it cites and why it may
 * be skipped. The server's checks add how to run them, the client's how to judge a session.
 */
export interface CheckMeta<C extends string = string> {
  readonly id: string;
  readonly title: string;
  readonly category: C;
  readonly severity: Severity;
  /** The rule enforced: "API documentation §x.y" (Partner Lending API — Authentication and Access), RFC sections, or both. */
  readonly reference: string;
  /** The sentence of the rule whose strongest normative word sets the severity, quoted with its source. */
  readonly citation: string;
  /** What must hold in the run before a pass counts; when it does not, the check is skipped ("not verified"). */
  readonly precondition: string;
  /** What the check keeps as evidence (README table). */
  readonly records: string;
  /** One line for the developer whose program failed the check: how to fix it. */
  readonly fix: string;
}

/** A check's verdict as a report records it; the one place a result is made, for both modes. */
export function toCheckResult(
  check: CheckMeta,
  verdict: { status: CheckStatus; details: string },
  evidence: { listed: Evidence[]; omitted: number },
  durationMs: number,
): CheckResult {
  return {
    id: check.id,
    title: check.title,
    category: check.category,
    severity: check.severity,
    status: verdict.status,
    reference: check.reference,
    citation: check.citation,
    precondition: check.precondition,
    details: verdict.details,
    ...(verdict.status === 'failed' && { fix: check.fix }),
    evidence: evidence.listed,
    evidenceOmitted: evidence.omitted,
    durationMs: Math.round(durationMs * 10) / 10,
  };
}
