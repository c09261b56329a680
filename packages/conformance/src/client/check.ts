import type { CheckMeta, ClientCategory } from '../common/check-meta.js';
import type { RecordedExchange } from './session.js';
import type { SessionView } from './view.js';

export { type ClientCategory, clientCategories } from '../common/check-meta.js';

/** What a client check found, and the exchanges it judged (its evidence). */
export interface ClientOutcome {
  status: 'passed' | 'failed' | 'skipped';
  details: string;
  /** The exchanges judged, the ones that decided the verdict first. */
  evidence: readonly RecordedExchange[];
}

/**
 * One check of the client catalogue: its metadata, and a pure function of a recorded session, so that
 * a saved session is judged again to the same verdicts (`--judge`).
 */
export interface ClientCheck extends CheckMeta<ClientCategory> {
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
