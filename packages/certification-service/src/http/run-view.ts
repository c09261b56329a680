import { reportContentSecurityPolicy } from '@partner-lending/conformance';
import type { Database } from '../db/database.js';
import { approvability, coverageOf } from '../production/approvability.js';
import { latestDecisionOn } from '../production/decisions/decisions.js';
import { iso, type RunRow } from '../runs/runs.js';

/**
 * A run as the API shows it to its partner: its state, the partner and plan, what it covered, whether a
 * reviewer may approve it (and if not, why), the latest decision on it, and its report once judged.
 */
export async function runView(db: Database, run: RunRow) {
  const [partner] = await db.query<{ id: string; name: string }>(
    'SELECT id, name FROM partners WHERE id = $1',
    [run.partner_id],
  );
  const report = run.report_json ? JSON.parse(run.report_json) : null;
  const decision = await latestDecisionOn(db, run.id);
  const { approvable, notApprovable } = approvability({
    status: publicStatus(run.status),
    certify: run.certify,
    verdict: run.verdict,
    attestation: typeof run.attestation === 'string',
    plan: run.plan,
    report,
  });
  return {
    id: run.id,
    kind: run.certify ? 'certification' : 'practice',
    status: publicStatus(run.status),
    createdAt: iso(run.created_at),
    expiresAt: iso(run.expires_at),
    finishedAt: iso(run.finished_at),
    partner: partner ? { id: partner.id, name: partner.name } : null,
    integration: run.integration,
    plan: run.plan ? { id: run.plan.id, digest: run.plan.digest } : null,
    verdict: run.verdict,
    coverage: report ? coverageOf(report) : null,
    approvable,
    notApprovable,
    decision: decision
      ? {
          id: decision.id,
          decision: decision.decision,
          at: decision.at,
          note: decision.note,
          validUntil: decision.validUntil,
        }
      : null,
    report,
  };
}

/** `closing` is an instant of judging: outside, the run is still open until it is judged. */
export const publicStatus = (status: RunRow['status']) => (status === 'closing' ? 'open' : status);

/** A stored HTML report, under the report's own CSP (the one its meta tag holds) and no framing. */
export function reportResponse(html: string): Response {
  return new Response(html, {
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': `${reportContentSecurityPolicy}; frame-ancestors 'none'`,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'cache-control': 'no-store',
    },
  });
}
