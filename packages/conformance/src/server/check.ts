import type { Category, CheckMeta } from '../common/check-meta.js';
import type { CheckContext } from './context.js';

export { type Category, categories } from '../common/check-meta.js';

/** What a check found: `details` says what was expected and what came back. */
export interface CheckOutcome {
  status: 'passed' | 'failed' | 'skipped';
  details: string;
}

/** One check of the server catalogue: its metadata, and how to run it against a target. */
export interface Check extends CheckMeta<Category> {
  /** Runs after every other check, because it judges what the others saw. */
  readonly final?: boolean;
  run(context: CheckContext): Promise<CheckOutcome>;
}

/** The precondition of every check that judges an API refusal: the positive control of the API (context.apiControl). */
export const API_CONTROL =
  'GET loans with a valid token gets 2xx (or 403 insufficient_scope for a client without read:loans) in this run: the route is reached and valid tokens work there';

export const defineCheck = (check: Check): Check => check;

export const passed = (details: string): CheckOutcome => ({ status: 'passed', details });
export const failed = (details: string): CheckOutcome => ({ status: 'failed', details });
export const skipped = (details: string): CheckOutcome => ({ status: 'skipped', details });
/** The precondition did not hold: the check verified nothing, so it is skipped, never passed. */
export const notVerified = (reason: string): CheckOutcome => ({
  status: 'skipped',
  details: `not verified: ${reason}`,
});

/**
 * Failed with the problems when there are any, else passed with `onPass` (what was seen); `always` is
 * context shown either way (e.g. the authorised set the check compared against).
 */
export function judge(
  problems: readonly string[],
  onPass: readonly string[],
  always: readonly string[] = [],
): CheckOutcome {
  return problems.length > 0
    ? failed([...problems, ...always].join('\n'))
    : passed([...always, ...onPass].join('\n') || 'as expected');
}
