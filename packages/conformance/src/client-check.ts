import type { RecordedExchange } from './client/session.js';
import type { SessionView } from './client/view.js';
import type { Severity } from './report.js';

/** The categories of the client catalogue, in report order. */
export const clientCategories = [
  'client-credentials',
  'client-token-lifecycle',
  'client-resilience',
  'client-scope',
  'client-requests',
] as const;
export type ClientCategory = (typeof clientCategories)[number];

/** What a client check found, and the exchanges it judged (its evidence). */
export interface ClientOutcome {
  status: 'passed' | 'failed' | 'skipped';
  details: string;
  /** The exchanges judged, the ones that decided the verdict first. */
  evidence: readonly RecordedExchange[];
}

/**
 * One check of the client catalogue: a pure function of a recorded session, so that a saved session
 * is judged again to the same verdicts (`--judge`).
 */
export interface ClientCheck {
  readonly id: string;
  readonly title: string;
  readonly category: ClientCategory;
  readonly severity: Severity;
  readonly reference: string;
  readonly citation: string;
  readonly precondition: string;
  readonly records: string;
  /** One line for the partner's developer when the check fails. */
  readonly fix: string;
  judge(view: SessionView): ClientOutcome;
}

export const defineClientCheck = (check: ClientCheck): ClientCheck => check;

export const clientPassed = (details: string, evidence: readonly RecordedExchange[]): ClientOutcome => ({
  status: 'passed',
  details,
  evidence,
});
export const clientFailed = (details: string, evidence: readonly RecordedExchange[]): ClientOutcome => ({
  status: 'failed',
  details,
  evidence,
});
/** The journey never reached what the check judges: skipped, never passed. */
export const clientNotVerified = (
  reason: string,
  evidence: readonly RecordedExchange[] = [],
): ClientOutcome => ({ status: 'skipped', details: `not verified: ${reason}`, evidence });

/** The offending items first, then the others: the evidence order of every client check. */
export function offendersFirst<T>(offenders: readonly T[], all: readonly T[]): T[] {
  const bad = new Set(offenders);
  return [...offenders, ...all.filter((item) => !bad.has(item))];
}
