import type { Hono } from 'hono';
import type { Database, Queryable } from '../db/database.js';
import type { LogLine } from '../observability/logger.js';
import type { Production } from '../production/index.js';
import type { RegressionFinding } from './finding.js';
import { mountRegressionPages, regressionsSection } from './page.js';
import {
  type RecordedRegression,
  recordRegression,
  recordRegressionIn,
  regressionCommitted,
} from './record.js';
import { mountRegressionApi } from './routes.js';
import type { RegressionPolicy } from './statement.js';
import { type ClaimEvidence, type CreateJudge, type RegressionWatch, startRegressionWatch } from './watch.js';
import { createPartnerJudge } from './windows.js';

/**
 * Regressions on one instance: recording them under the service's policy (`--on-regression`), the
 * partner API's list, the reviewer page's part, and — when the evidence side hands out exchanges — the
 * watch that judges them.
 */
export function startRegressions(deps: {
  db: Database;
  production: Pick<Production, 'key' | 'nudge'>;
  policy: RegressionPolicy;
  log: LogLine;
  /**
   * The evidence side's hand-out (`claimExchanges`), and the judge (default `createPartnerJudge`); without
   * a hand-out no evidence is judged on this instance.
   */
  evidence?: { claim: ClaimEvidence; createJudge?: CreateJudge; intervalMs?: number };
}) {
  const options = { policy: deps.policy, signingKey: deps.production.key, nudge: deps.production.nudge };
  const record = (finding: RegressionFinding) => recordRegression(deps.db, finding, options);
  const watch: RegressionWatch | undefined =
    deps.evidence &&
    startRegressionWatch({
      claim: deps.evidence.claim,
      transaction: (work) => deps.db.transaction(work),
      createJudge: deps.evidence.createJudge ?? createPartnerJudge,
      record: (tx, finding) => recordRegressionIn(tx, finding, options),
      committed: (outcomes) => regressionCommitted(outcomes, options),
      ...(deps.evidence.intervalMs !== undefined && { intervalMs: deps.evidence.intervalMs }),
      log: deps.log,
    });
  return {
    policy: deps.policy,
    /** Records a finding in its own transaction (see `recordRegression`). */
    record,
    /** Records a finding in the caller's transaction; `committed` once it committed (see `recordRegressionIn`). */
    recordIn: (tx: Queryable, finding: RegressionFinding) => recordRegressionIn(tx, finding, options),
    committed: (outcomes: readonly RecordedRegression[]) => regressionCommitted(outcomes, options),
    watch,
    /** The regressions part of a partner's production page. */
    section: regressionsSection(deps.db),
    /** The partner API's routes (after the API's key check) and the reviewer's statement download (after the UI's sign-in). */
    // biome-ignore lint/suspicious/noExplicitAny: mounted on the service's one app
    mount(app: Hono<any>) {
      mountRegressionApi(app, { db: deps.db });
      mountRegressionPages(app, { db: deps.db });
    },
    close: async () => {
      await watch?.close();
    },
  };
}

export type Regressions = ReturnType<typeof startRegressions>;
