import type { Queryable } from '../db/database.js';
import type { Exchange } from '../evidence/exchange.js';
import type { RegressionConsequence, RegressionPolicy, RegressionPredicate } from './statement.js';

/**
 * A regression as the partner API and the reviewer's page show it: what its signed statement says
 * (less the partner and plan, which the reader knows), its id, and whether a later approval settled it.
 */
export type PublicRegression = Omit<RegressionPredicate, 'regressionId' | 'partner' | 'plan'> & {
  id: string;
  /** When a later approval settled it (null: not yet), and which. */
  resolvedAt: string | null;
  resolvedBy: string | null;
};

interface StoredRegression {
  id: string;
  check_id: string;
  detail: string;
  at: string | number;
  window_from: string | number;
  window_to: string | number;
  exchanges: Exchange[];
  policy: RegressionPolicy;
  consequence: RegressionConsequence;
  suspension_id: string | null;
  run_id: string | null;
  created_at: string | Date;
  resolved_at: string | Date | null;
  resolved_by: string | null;
}

const iso = (value: string | number | Date) =>
  new Date(typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value).toISOString();

/** The most regressions one list holds (newest first). */
export const regressionListLimit = 100;

/** A partner's regressions, newest first (at most `limit`, up to 100). */
export async function listRegressions(
  db: Queryable,
  partnerId: string,
  limit = regressionListLimit,
): Promise<PublicRegression[]> {
  const rows = await db.query<StoredRegression>(
    `SELECT id, check_id, detail, at, window_from, window_to, exchanges, policy, consequence, suspension_id, run_id,
       created_at, resolved_at, resolved_by
     FROM regressions WHERE partner_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`,
    [partnerId, Math.max(1, Math.min(limit, regressionListLimit))],
  );
  return rows.map((row) => ({
    id: row.id,
    check: row.check_id,
    detail: row.detail,
    at: iso(row.at),
    window: { from: iso(row.window_from), to: iso(row.window_to) },
    exchanges: row.exchanges,
    policy: row.policy,
    consequence: row.consequence,
    suspensionId: row.suspension_id,
    runId: row.run_id,
    recordedAt: iso(row.created_at),
    resolvedAt: row.resolved_at === null ? null : iso(row.resolved_at),
    resolvedBy: row.resolved_by,
  }));
}

/** A regression's signed statement (its DSSE envelope as stored), of `partnerId` when given; undefined when none. */
export async function regressionEnvelope(
  db: Queryable,
  regressionId: string,
  partnerId?: string,
): Promise<string | undefined> {
  const [row] = await db.query<{ envelope: string; partner_id: string }>(
    'SELECT envelope, partner_id FROM regressions WHERE id = $1',
    [regressionId],
  );
  if (!row || (partnerId !== undefined && row.partner_id !== partnerId)) return undefined;
  return row.envelope;
}

/** A regression statement as a download (`<regressionId>.regression.json`). */
export function regressionStatementResponse(envelope: string, regressionId: string): Response {
  return new Response(envelope, {
    headers: {
      'content-type': 'application/json',
      'content-disposition': `attachment; filename="${regressionId.replace(/[^A-Za-z0-9_-]/g, '_')}.regression.json"`,
      'x-content-type-options': 'nosniff',
      'content-security-policy': "default-src 'none'",
      'cache-control': 'no-store',
    },
  });
}
