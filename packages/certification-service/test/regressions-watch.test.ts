import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addPartner, addReviewer } from '../src/admin.js';
import type { Database, Queryable } from '../src/db/database.js';
import { openDatabase } from '../src/db/database.js';
import { migrate } from '../src/db/migrations.js';
import { UsageError } from '../src/errors.js';
import { claimExchanges, EvidenceLeaseLost } from '../src/evidence/claim.js';
import type { Exchange } from '../src/evidence/exchange.js';
import { queuedExchange } from '../src/evidence/store.js';
import { recordSignedDecision } from '../src/production/decisions/signed.js';
import type { RegressionFinding } from '../src/regressions/finding.js';
import {
  type RecordedRegression,
  recordRegressionIn,
  regressionCommitted,
} from '../src/regressions/record.js';
import type { ClaimEvidence, ClaimedEvidence, CreateJudge } from '../src/regressions/watch.js';
import { startRegressionWatch } from '../src/regressions/watch.js';
import { createPartnerJudge } from '../src/regressions/windows.js';
import { attestedRun } from './support/in-process.js';
import { startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';

// The watch loop over the real evidence tables (migration 8), on both stores: exchanges queued for a
// partner are handed to its judge once, its findings recorded as regressions, its state committed with
// the queue rows' removal; a round that fails commits nothing and the next one judges them again,
// recording each finding once. The hand-out here is a small one written for this test against the
// tables; the evidence side's own replaces it in the service.

interface Row {
  id: string;
  at: string;
  kind: 'token' | 'api';
  method: string;
  path: string;
  status: number;
  fingerprint: string | null;
  scopes_granted: string[] | null;
  expires_at: string | null;
  error: string | null;
  reporter_id: string;
}

const exchangeOf = (partnerId: string, row: Row): Exchange => ({
  at: Number(row.at),
  partnerId,
  kind: row.kind,
  method: row.method,
  path: row.path,
  status: row.status,
  reporterId: row.reporter_id,
  ...(row.fingerprint !== null && { fingerprint: row.fingerprint }),
  ...(row.scopes_granted !== null && { scopesGranted: row.scopes_granted }),
  ...(row.expires_at !== null && { expiresAt: Number(row.expires_at) }),
  ...(row.error !== null && { error: row.error }),
});

/**
 * A hand-out over the evidence tables, of the evidence side's shape: per partner, a lease on its cursor,
 * its queued exchanges and state; `commit` stores the state, removes the queue rows and runs `write` in
 * one transaction (a failed one leaves the lease to run out: `leaseMs`).
 */
function databaseClaim(db: Database, leaseMs = 0): ClaimEvidence {
  return async () => {
    const partners = await db.query<{ partner_id: string }>(
      'SELECT DISTINCT partner_id FROM evidence_queue ORDER BY partner_id',
    );
    const claims: ClaimedEvidence[] = [];
    for (const { partner_id: partnerId } of partners) {
      await db.query('INSERT INTO evidence_cursors (partner_id) VALUES ($1) ON CONFLICT DO NOTHING', [
        partnerId,
      ]);
      const lease = randomUUID();
      const [taken] = await db.query<{ state: unknown }>(
        `UPDATE evidence_cursors SET lease_token = $2, lease_until = now() + make_interval(secs => $3)
         WHERE partner_id = $1 AND (lease_until IS NULL OR lease_until < now()) RETURNING state`,
        [partnerId, lease, leaseMs / 1000],
      );
      if (!taken) continue;
      const rows = await db.query<Row>(
        `SELECT e.* FROM evidence_queue q JOIN evidence_exchanges e ON e.id = q.exchange_id
         WHERE q.partner_id = $1 ORDER BY q.at, q.exchange_id LIMIT 1000`,
        [partnerId],
      );
      claims.push({
        partnerId,
        exchanges: rows.map((row) => exchangeOf(partnerId, row)),
        state: taken.state ?? undefined,
        commit: (state, write) =>
          db.transaction(async (tx) => {
            await tx.query(
              'DELETE FROM evidence_queue WHERE exchange_id IN (SELECT (jsonb_array_elements_text($1::jsonb))::bigint)',
              [JSON.stringify(rows.map((row) => row.id))],
            );
            await tx.query(
              `UPDATE evidence_cursors SET state = $3, lease_token = NULL, lease_until = NULL, judged_at = now(),
                 judged = judged + $4 WHERE partner_id = $1 AND lease_token = $2`,
              [partnerId, lease, JSON.stringify(state), rows.length],
            );
            await write?.(tx);
          }),
        release: async () => {
          await db.query(
            'UPDATE evidence_cursors SET lease_token = NULL, lease_until = NULL WHERE partner_id = $1 AND lease_token = $2',
            [partnerId, lease],
          );
        },
      });
    }
    return claims;
  };
}

/**
 * A stand-in judge (the production judge is another module's): a finding whenever a partner's 401
 * answers reach three in a row across batches — its state carries the streak, so a finding needs the
 * state committed by the round before.
 */
const streakJudge: CreateJudge = (partnerId, options) => {
  let streak = (options.state as { streak?: Exchange[] } | undefined)?.streak ?? [];
  return {
    observe(exchanges) {
      const findings: RegressionFinding[] = [];
      for (const exchange of exchanges) {
        streak = exchange.status === 401 ? [...streak, exchange] : [];
        if (streak.length === 3) {
          findings.push({
            check: 'client-token-expiry',
            partnerId,
            at: exchange.at,
            detail: 'three calls in a row with a token the API refused',
            exchanges: streak,
            window: { from: streak[0]!.at, to: exchange.at },
          });
          streak = [];
        }
      }
      return findings;
    },
    state: () => ({ streak }),
  };
};

const stores: Array<['embedded' | 'postgres']> = [['embedded'], ['postgres']];

/**
 * The database with what recording needs, and no service: the service's own watch (over the evidence
 * side's hand-out) would otherwise claim the exchanges these tests queue.
 */
async function openBench(databaseUrl: string | undefined) {
  const dir = mkdtempSync(join(tmpdir(), 'pcs-watch-'));
  const db = await openDatabase({ databaseUrl, dataDir: join(dir, 'data') });
  await migrate(db);
  const key = { privateKey: generateKeyPairSync('ed25519').privateKey, kid: 'watch-test' };
  const options = { policy: 'suspend' as const, signingKey: key };
  return {
    db,
    key,
    partner: (name: string) => addPartner(db, name),
    reviewer: (name: string) => addReviewer(db, name),
    recordIn: (tx: Queryable, finding: RegressionFinding) => recordRegressionIn(tx, finding, options),
    committed: (outcomes: readonly RecordedRegression[]) => regressionCommitted(outcomes, {}),
    async close() {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe.each(stores)('the regression watch on the %s store', (store) => {
  let postgres: ThrowawayPostgres | undefined;
  let svc: Awaited<ReturnType<typeof openBench>>;
  let reporterId: string;
  beforeAll(async () => {
    if (store === 'postgres') postgres = await startPostgres();
    svc = await openBench(postgres && (await postgres.database('watch')));
    reporterId = `rep_${randomUUID().slice(0, 8)}`;
    await svc.db.query("INSERT INTO evidence_reporters (id, name, key_hash) VALUES ($1, 'gateway', $2)", [
      reporterId,
      randomUUID(),
    ]);
  }, 120_000);
  afterAll(async () => {
    await svc?.close();
    await postgres?.stop();
  });

  let clock = Date.UTC(2026, 10, 2);
  /** Queues exchanges for a partner as ingest does: one row in evidence_exchanges and one in the queue each. */
  async function queue(partnerId: string, statuses: number[]) {
    for (const status of statuses) {
      clock += 1000;
      const [row] = await svc.db.query<{ id: string }>(
        `INSERT INTO evidence_exchanges (partner_id, reporter_id, at, kind, method, path, status, fingerprint, error)
         VALUES ($1, $2, $3, 'api', 'GET', '/loans', $4, $5, $6) RETURNING id`,
        [partnerId, reporterId, clock, status, `fp_${clock}`, status === 401 ? 'invalid_token' : null],
      );
      await svc.db.query(
        `INSERT INTO evidence_queue (exchange_id, partner_id, at, exchange)
         SELECT id, partner_id, at, ${queuedExchange} FROM evidence_exchanges WHERE id = $1`,
        [row!.id],
      );
      await svc.db.query('INSERT INTO evidence_cursors (partner_id) VALUES ($1) ON CONFLICT DO NOTHING', [
        partnerId,
      ]);
    }
  }

  /** A partner with a standing approval (recorded as decide records one). */
  async function approvedPartner(name: string) {
    const partner = await svc.partner(name);
    const runId = await attestedRun(svc.db, partner.partnerId);
    const { reviewerId } = await svc.reviewer(`Reviewer of ${name}`);
    await svc.db.transaction((tx) =>
      recordSignedDecision(
        tx,
        {
          partnerId: partner.partnerId,
          runId,
          reviewerId,
          decision: 'approved',
          note: 'certified',
          scopes: ['loans:read'],
          validUntil: new Date(Date.now() + 86_400_000),
        },
        { key: svc.key },
      ),
    );
    return partner;
  }

  const regressionsOf = (partnerId: string) =>
    svc.db.query<{ check_id: string; consequence: string }>(
      'SELECT check_id, consequence FROM regressions WHERE partner_id = $1 ORDER BY created_at',
      [partnerId],
    );

  const recording = () => ({
    record: svc.recordIn,
    committed: svc.committed,
  });

  it('judges queued exchanges once, with the state carried across rounds, and records each finding', async () => {
    const partner = await svc.partner(`Watched ${store}`);
    const quiet = await svc.partner(`Quiet ${store}`);
    const watch = startRegressionWatch({
      claim: databaseClaim(svc.db),
      createJudge: streakJudge,
      ...recording(),
      intervalMs: 3_600_000,
    });
    try {
      // Two refusals: no finding yet, but the streak is in the committed state.
      await queue(partner.partnerId, [200, 401, 401]);
      await queue(quiet.partnerId, [200, 200]);
      await watch.round();
      expect(await regressionsOf(partner.partnerId)).toEqual([]);
      const [cursor] = await svc.db.query<{ state: { streak: Exchange[] }; judged: string }>(
        'SELECT state, judged FROM evidence_cursors WHERE partner_id = $1',
        [partner.partnerId],
      );
      expect(cursor!.state.streak).toHaveLength(2);
      expect(Number(cursor!.judged)).toBe(3);
      expect(await svc.db.query('SELECT 1 FROM evidence_queue')).toEqual([]);
      // The third refusal, in the next round, completes the streak: one regression.
      await queue(partner.partnerId, [401]);
      await watch.round();
      expect(await regressionsOf(partner.partnerId)).toEqual([
        { check_id: 'client-token-expiry', consequence: 'unchanged' },
      ]);
      // Nothing new: a round records nothing more (each exchange was judged once).
      await watch.round();
      expect(await regressionsOf(partner.partnerId)).toHaveLength(1);
      expect(await regressionsOf(quiet.partnerId)).toEqual([]);
    } finally {
      await watch.close();
    }
  }, 60_000);

  it('a failing round commits nothing, neither state nor regression; the next records the finding once', async () => {
    const partner = await approvedPartner(`Crashing ${store}`);
    const lines: string[] = [];
    let failures = 1;
    const watch = startRegressionWatch({
      claim: databaseClaim(svc.db),
      createJudge: streakJudge,
      // Records the finding, then fails once: the commit it is part of rolls back.
      record: async (tx, finding) => {
        const outcome = await svc.recordIn(tx, finding);
        if (failures-- > 0) throw new Error('the instance stopped mid-commit');
        return outcome;
      },
      committed: svc.committed,
      intervalMs: 3_600_000,
      log: (line) => lines.push(line),
    });
    try {
      await queue(partner.partnerId, [401, 401, 401]);
      await watch.round();
      expect(lines).toEqual([
        `regression watch: a round failed (${partner.partnerId}: the instance stopped mid-commit); those exchanges are judged again later`,
      ]);
      const queued = () =>
        svc.db.query('SELECT 1 FROM evidence_queue WHERE partner_id = $1', [partner.partnerId]);
      expect(await queued()).toHaveLength(3);
      expect(await regressionsOf(partner.partnerId)).toEqual([]);
      expect(
        (
          await svc.db.query('SELECT state FROM evidence_cursors WHERE partner_id = $1', [partner.partnerId])
        )[0],
      ).toEqual({
        state: null,
      });
      await watch.round();
      expect(lines.at(-1)).toBe('regression watch: judging production evidence again');
      expect(await queued()).toEqual([]);
      expect(await regressionsOf(partner.partnerId)).toEqual([
        { check_id: 'client-token-expiry', consequence: 'suspended' },
      ]);
      const suspensions = await svc.db.query(
        "SELECT id FROM decisions WHERE partner_id = $1 AND decision = 'suspended'",
        [partner.partnerId],
      );
      expect(suspensions).toHaveLength(1);
    } finally {
      await watch.close();
    }
  }, 60_000);

  it('a judge that throws gives the partner back; the next round judges the same exchanges', async () => {
    const partner = await svc.partner(`Judge fails ${store}`);
    let throws = 1;
    const watch = startRegressionWatch({
      claim: databaseClaim(svc.db, 3_600_000),
      createJudge: (partnerId, options) => {
        if (throws-- > 0)
          throw new UsageError('createPartnerJudge: options.state is not a state this judge wrote');
        return streakJudge(partnerId, options);
      },
      ...recording(),
      intervalMs: 3_600_000,
    });
    try {
      await queue(partner.partnerId, [401, 401, 401]);
      await watch.round();
      expect(await regressionsOf(partner.partnerId)).toEqual([]);
      // Released, not left to its hour-long lease: the next round claims it again.
      await watch.round();
      expect(await regressionsOf(partner.partnerId)).toHaveLength(1);
    } finally {
      await watch.close();
    }
  }, 60_000);

  it('with the production judge: a token per call becomes one client-token-reuse regression', async () => {
    const partner = await svc.partner(`Token per call ${store}`);
    const start = Date.UTC(2026, 10, 3);
    // 320 token issues, each followed by one call with that token, one pair every 10 s (53 min).
    await svc.db.query(
      `WITH made AS (
         INSERT INTO evidence_exchanges (partner_id, reporter_id, at, kind, method, path, status, fingerprint, scopes_granted, expires_at)
         SELECT $1, $2, $3::bigint + g * 10000 + k * 100, CASE k WHEN 0 THEN 'token' ELSE 'api' END,
           CASE k WHEN 0 THEN 'POST' ELSE 'GET' END, CASE k WHEN 0 THEN '/oauth/token' ELSE '/v3/loans' END, 200,
           'fp' || g, CASE k WHEN 0 THEN '["loans:read"]'::jsonb END,
           CASE k WHEN 0 THEN $3::bigint + g * 10000 + 43199000 END
         FROM generate_series(1, 320) g, generate_series(0, 1) k RETURNING *)
       INSERT INTO evidence_queue (exchange_id, partner_id, at, exchange) SELECT id, partner_id, at, ${queuedExchange} FROM made`,
      [partner.partnerId, reporterId, start],
    );
    const watch = startRegressionWatch({
      claim: databaseClaim(svc.db),
      createJudge: createPartnerJudge,
      ...recording(),
      intervalMs: 3_600_000,
    });
    try {
      await watch.round();
      const found = await svc.db.query<{ check_id: string; exchanges: Exchange[] }>(
        'SELECT check_id, exchanges FROM regressions WHERE partner_id = $1',
        [partner.partnerId],
      );
      expect(found.map((row) => row.check_id)).toEqual(['client-token-reuse']);
      expect(found[0]!.exchanges.length).toBeGreaterThan(0);
      expect(found[0]!.exchanges.length).toBeLessThanOrEqual(20);
    } finally {
      await watch.close();
    }
  }, 60_000);

  it('with the production judge: a token reused for every call raises nothing (control)', async () => {
    const partner = await svc.partner(`Token reused ${store}`);
    const start = Date.UTC(2026, 10, 3);
    await svc.db.query(
      `WITH made AS (
         INSERT INTO evidence_exchanges (partner_id, reporter_id, at, kind, method, path, status, fingerprint, scopes_granted, expires_at)
         SELECT $1, $2, $3::bigint + g * 10000, CASE g WHEN 0 THEN 'token' ELSE 'api' END,
           CASE g WHEN 0 THEN 'POST' ELSE 'GET' END, CASE g WHEN 0 THEN '/oauth/token' ELSE '/v3/loans' END, 200,
           'fp-one', CASE g WHEN 0 THEN '["loans:read"]'::jsonb END, CASE g WHEN 0 THEN $3::bigint + 43199000 END
         FROM generate_series(0, 640) g RETURNING *)
       INSERT INTO evidence_queue (exchange_id, partner_id, at, exchange) SELECT id, partner_id, at, ${queuedExchange} FROM made`,
      [partner.partnerId, reporterId, start],
    );
    const watch = startRegressionWatch({
      claim: databaseClaim(svc.db),
      createJudge: createPartnerJudge,
      ...recording(),
      intervalMs: 3_600_000,
    });
    try {
      await watch.round();
      expect(await regressionsOf(partner.partnerId)).toEqual([]);
      expect(
        await svc.db.query('SELECT 1 FROM evidence_queue WHERE partner_id = $1', [partner.partnerId]),
      ).toEqual([]);
    } finally {
      await watch.close();
    }
  }, 60_000);

  it('commits a round in one transaction; a partner whose commit fails is rolled back alone', async () => {
    const kept = await approvedPartner(`Together kept ${store}`);
    const lost = await approvedPartner(`Together lost ${store}`);
    const also = await svc.partner(`Together also ${store}`);
    const transactions: string[] = [];
    const told: string[] = [];
    const lines: string[] = [];
    const watch = startRegressionWatch({
      // The evidence side's own hand-out; `lost`'s claim loses its lease before the commit.
      claim: async () => {
        const claims = await claimExchanges(svc.db, { leaseMs: 60_000 });
        await svc.db.query('UPDATE evidence_cursors SET lease_token = $2 WHERE partner_id = $1', [
          lost.partnerId,
          'another-instance',
        ]);
        return claims;
      },
      transaction: (work) => {
        transactions.push('begin');
        return svc.db.transaction(work);
      },
      createJudge: streakJudge,
      record: svc.recordIn,
      committed: (outcomes) => told.push(...outcomes.map((outcome) => outcome.regressionId)),
      intervalMs: 3_600_000,
      log: (line) => lines.push(line),
    });
    try {
      await queue(kept.partnerId, [401, 401, 401]);
      await queue(lost.partnerId, [401, 401, 401]);
      await queue(also.partnerId, [200]);
      await watch.round();
      // One transaction for the three partners' commits.
      expect(transactions).toEqual(['begin']);
      expect(lines).toEqual([
        `regression watch: a round failed (${lost.partnerId}: ${new EvidenceLeaseLost(lost.partnerId).message}); those exchanges are judged again later`,
      ]);
      // kept: its finding recorded and told; lost: nothing recorded, its exchanges still queued.
      expect(await regressionsOf(kept.partnerId)).toEqual([
        { check_id: 'client-token-expiry', consequence: 'suspended' },
      ]);
      const keptIds = await svc.db.query<{ id: string }>('SELECT id FROM regressions WHERE partner_id = $1', [
        kept.partnerId,
      ]);
      expect(told).toEqual(keptIds.map((row) => row.id));
      expect(await regressionsOf(lost.partnerId)).toEqual([]);
      const queued = await svc.db.query<{ partner_id: string }>(
        'SELECT DISTINCT partner_id FROM evidence_queue WHERE partner_id = ANY($1)',
        [[kept.partnerId, lost.partnerId, also.partnerId]],
      );
      expect(queued.map((row) => row.partner_id)).toEqual([lost.partnerId]);
      const suspended = await svc.db.query(
        "SELECT partner_id FROM decisions WHERE decision = 'suspended' AND partner_id = ANY($1)",
        [[kept.partnerId, lost.partnerId]],
      );
      expect(suspended).toEqual([{ partner_id: kept.partnerId }]);
    } finally {
      await watch.close();
      await svc.db.query('DELETE FROM evidence_queue WHERE partner_id = $1', [lost.partnerId]);
    }
  }, 60_000);

  it('claims again at once only after a full claim; a partial one waits for the interval', async () => {
    const partner = await svc.partner(`Paced ${store}`);
    await queue(partner.partnerId, [200, 200, 200, 200, 200]);
    const handed: number[] = [];
    const watch = startRegressionWatch({
      claim: async () => {
        const claims = await claimExchanges(svc.db, { perPartner: 2 });
        handed.push(claims.reduce((sum, claim) => sum + claim.exchanges.length, 0));
        return claims;
      },
      transaction: (work) => svc.db.transaction(work),
      createJudge: streakJudge,
      ...recording(),
      intervalMs: 3_600_000,
    });
    try {
      await watch.round();
      // 2 and 2 (full: again at once), then 1 (not full: the next waits the hour).
      for (let waited = 0; handed.length < 3 && waited < 100; waited += 1)
        await new Promise((resolve) => setTimeout(resolve, 50));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(handed).toEqual([2, 2, 1]);
      expect(
        await svc.db.query('SELECT 1 FROM evidence_queue WHERE partner_id = $1', [partner.partnerId]),
      ).toEqual([]);
    } finally {
      await watch.close();
    }
  }, 60_000);

  it('runs by itself every interval and stops cleanly on close', async () => {
    const partner = await svc.partner(`Timed ${store}`);
    let rounds = 0;
    const claim = databaseClaim(svc.db);
    const watch = startRegressionWatch({
      claim: async () => {
        rounds += 1;
        return claim();
      },
      createJudge: streakJudge,
      ...recording(),
      intervalMs: 20,
    });
    await queue(partner.partnerId, [401, 401, 401]);
    const deadline = Date.now() + 20_000;
    while ((await regressionsOf(partner.partnerId)).length === 0 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await regressionsOf(partner.partnerId)).toHaveLength(1);
    await watch.close();
    const after = rounds;
    await new Promise((resolve) => setTimeout(resolve, 200));
    // Control: it ran on its own before close, and not once after.
    expect(after).toBeGreaterThan(0);
    expect(rounds).toBe(after);
  }, 60_000);
});
