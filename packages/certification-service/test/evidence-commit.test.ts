import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addPartner } from '../src/admin.js';
import { type Database, openDatabase } from '../src/db/database.js';
import { migrate } from '../src/db/migrations.js';
import { claimExchanges, EvidenceLeaseLost, vacuumEveryJudged } from '../src/evidence/claim.js';
import { addEvidenceReporter } from '../src/evidence/reporters.js';
import { storeBatch } from '../src/evidence/store.js';
import { startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';

// How judged evidence leaves the queue (evidence/claim.ts), on both stores: by the ids handed out, so
// that a late exchange among them stays; a lost lease changes nothing; and, on the embedded store
// (PGlite runs PostgreSQL without autovacuum), the queue is vacuumed as exchanges are judged.
const stores: Array<['embedded' | 'postgres']> = [['embedded'], ['postgres']];

describe.each(stores)('judged evidence leaving the queue on the %s store', (store) => {
  let postgres: ThrowawayPostgres | undefined;
  let dir: string;
  let db: Database;
  let reporterId: string;
  let batches = 0;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pcs-evidence-commit-'));
    if (store === 'postgres') postgres = await startPostgres();
    db = await openDatabase({
      databaseUrl: postgres && (await postgres.database('commit')),
      dataDir: join(dir, 'data'),
    });
    await migrate(db);
    ({ reporterId } = await addEvidenceReporter(db, 'commit gateway'));
  }, 120_000);
  afterAll(async () => {
    await db?.close();
    await postgres?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Stores one batch of `ats` for `partnerId` (an API call each). */
  const send = (partnerId: string, ats: number[]) => {
    batches += 1;
    return storeBatch(db, {
      reporterId,
      batchId: `batch-${batches}`,
      rejected: 0,
      exchanges: ats.map((at) => ({
        at,
        partnerId,
        kind: 'api' as const,
        method: 'GET',
        path: `/v3/${at}`,
        status: 200,
      })),
    });
  };
  const queued = async (partnerId: string) =>
    (
      await db.query<{ at: string }>('SELECT at FROM evidence_queue WHERE partner_id = $1 ORDER BY at', [
        partnerId,
      ])
    ).map((row) => Number(row.at));
  it('leaves a late exchange inside the claimed range queued, and hands it out next', async () => {
    const { partnerId } = await addPartner(db, 'Late Lending');
    await send(partnerId, [10_000, 30_000]);
    const [claim] = await claimExchanges(db, { partners: 16 });
    expect(claim!.exchanges.map((x) => x.at)).toEqual([10_000, 30_000]);
    // A reporter's late batch: served between the two, stored after the claim.
    await send(partnerId, [20_000]);
    // Control: a delete by the claimed range (the partner, at up to the last handed out) would take the
    // late one too: only the ids keep it from being removed unjudged.
    const [range] = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM evidence_queue WHERE partner_id = $1 AND at <= 30000',
      [partnerId],
    );
    expect(Number(range!.n)).toBe(3);
    await claim!.commit({ seen: 2 });
    expect(await queued(partnerId)).toEqual([20_000]);
    const [next] = await claimExchanges(db, { partners: 16 });
    expect(next!.exchanges.map((x) => x.at)).toEqual([20_000]);
    expect(next!.state).toEqual({ seen: 2 });
    await next!.commit({ seen: 3 });
    expect(await queued(partnerId)).toEqual([]);
  });

  it('refuses a single commit after its lease was lost, keeping the exchanges (EvidenceLeaseLost)', async () => {
    const { partnerId } = await addPartner(db, 'Lost Lending');
    await send(partnerId, [5000]);
    const [claim] = await claimExchanges(db, { partners: 16 });
    await db.query("UPDATE evidence_cursors SET lease_token = 'another-instance' WHERE partner_id = $1", [
      partnerId,
    ]);
    await expect(claim!.commit({ seen: 1 })).rejects.toBeInstanceOf(EvidenceLeaseLost);
    expect(await queued(partnerId)).toEqual([5000]);
    await db.query('DELETE FROM evidence_queue WHERE partner_id = $1', [partnerId]);
  });

  it(store === 'embedded'
    ? `vacuums the queue once ${vacuumEveryJudged} exchanges were judged (PGlite has no autovacuum)`
    : 'leaves vacuuming to autovacuum', async () => {
    const { partnerId } = await addPartner(db, 'Busy Lending');
    const vacuums = async () =>
      Number(
        (
          await db.query<{ n: string }>(
            "SELECT vacuum_count AS n FROM pg_stat_user_tables WHERE relname = 'evidence_queue'",
          )
        )[0]?.n ?? 0,
      );
    const judge = async (count: number) => {
      for (let sent = 0; sent < count; sent += 1000)
        await send(
          partnerId,
          Array.from({ length: Math.min(1000, count - sent) }, (_, index) => 1_000_000 + sent + index),
        );
      for (;;) {
        const claims = await claimExchanges(db, { partners: 16, perPartner: 5000 });
        if (claims.length === 0) return;
        for (const claim of claims) await claim.commit(null);
      }
    };
    // Below the mark (the tests before judged a handful): no vacuum yet, on either store.
    await judge(vacuumEveryJudged - 1000);
    expect(await vacuums()).toBe(0);
    await judge(1000);
    await claimExchanges(db);
    expect(await vacuums()).toBe(store === 'embedded' ? 1 : 0);
  }, 120_000);
});
