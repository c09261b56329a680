import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeBatch } from '../src/evidence/store.js';
import {
  addEvidenceReporter,
  addPartner,
  claimExchanges,
  type Database,
  type Exchange,
  migrate,
  migrations,
  openDatabase,
} from '../src/index.js';

// Migration 10: the judge reads each exchange from the queue's own copy (one text per partner), not
// from a join with the stored exchanges. What it is handed must be what was stored, field for field.
let dir: string;
let db: Database;
let partnerId: string;
let reporterId: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'pcs-evidence-queue-'));
  db = await openDatabase({ dataDir: join(dir, 'data') });
  partnerId = (await addPartner(db, 'Queue Lending')).partnerId;
  reporterId = (await addEvidenceReporter(db, 'queue gateway')).reporterId;
}, 120_000);
afterAll(async () => {
  await db?.close();
  rmSync(dir, { recursive: true, force: true });
});

const at = 1_790_000_000_000;

describe('the judge is handed each exchange as stored', () => {
  it('keeps every field, text that JSON must escape included, in at order then arrival', async () => {
    const stored: Omit<Exchange, 'reporterId'>[] = [
      {
        at: at + 20,
        partnerId,
        kind: 'token',
        method: 'POST',
        path: '/oauth/token',
        status: 200,
        fingerprint: 'fp,"one"\\',
        scopesGranted: ['read:loans', 'create:loan_draft'],
        expiresAt: at + 3_600_020,
      },
      { at: at + 10, partnerId, kind: 'api', method: 'GET', path: '/v3/loans?x=1,2\n"é"', status: 200 },
      {
        at: at + 10,
        partnerId,
        kind: 'api',
        method: 'GET',
        path: '/v3/partner/p/loans',
        status: 429,
        fingerprint: 'fp2',
        retryAfterSeconds: 7,
        error: 'rate,limited "now"\u2028',
      },
    ];
    await storeBatch(db, { reporterId, batchId: 'fields', rejected: 0, exchanges: stored });
    const [claim, ...others] = await claimExchanges(db, { partners: 4 });
    expect(others).toEqual([]);
    expect(claim!.partnerId).toBe(partnerId);
    // at order; the two at at+10 in the order they arrived.
    expect(claim!.exchanges).toEqual(
      [stored[1]!, stored[2]!, stored[0]!].map((exchange) => ({ ...exchange, reporterId })),
    );
    await claim!.commit({ seen: 3 });
    expect(await claimExchanges(db)).toEqual([]);
  });

  it('hands out at most perPartner a claim, the rest at the next, none twice', async () => {
    const exchanges = Array.from({ length: 25 }, (_, index) => ({
      at: at + 1000 + index,
      partnerId,
      kind: 'api' as const,
      method: 'GET',
      path: `/v3/${index}`,
      status: 200,
    }));
    await storeBatch(db, { reporterId, batchId: 'many', rejected: 0, exchanges });
    const seen: string[] = [];
    for (let round = 0; round < 5; round += 1) {
      const claims = await claimExchanges(db, { perPartner: 10 });
      if (claims.length === 0) break;
      expect(claims[0]!.exchanges.length).toBeLessThanOrEqual(10);
      seen.push(...claims[0]!.exchanges.map((exchange) => exchange.path));
      await claims[0]!.commit(null);
    }
    expect(seen).toEqual(exchanges.map((exchange) => exchange.path));
  });
});

describe('migration 10 on a store with exchanges queued under migration 9', () => {
  let old: Database;
  let oldDir: string;
  beforeAll(async () => {
    oldDir = mkdtempSync(join(tmpdir(), 'pcs-evidence-queue-9-'));
    old = await openDatabase({ dataDir: join(oldDir, 'data') });
  }, 120_000);
  afterAll(async () => {
    await old?.close();
    rmSync(oldDir, { recursive: true, force: true });
  });

  it('fills the queue copy of each waiting exchange, so the judge gets them all', async () => {
    await old.query('DROP TABLE IF EXISTS schema_migrations');
    const tables = await old.query<{ tablename: string }>(
      "SELECT tablename FROM pg_tables WHERE schemaname = 'public'",
    );
    for (const { tablename } of tables) await old.query(`DROP TABLE IF EXISTS ${tablename} CASCADE`);
    await old.transaction(async (tx) => {
      await tx.query(
        'CREATE TABLE schema_migrations (id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
      );
      for (const migration of migrations.filter((item) => item.id <= 9)) {
        for (const statement of migration.sql
          .split(/;\s*\n/)
          .map((item) => item.trim())
          .filter(Boolean))
          await tx.query(statement);
        await tx.query('INSERT INTO schema_migrations (id, name) VALUES ($1, $2)', [
          migration.id,
          migration.name,
        ]);
      }
      await tx.query("INSERT INTO partners (id, name, api_key_hash) VALUES ('ptn_old', 'Old', 'h')");
      await tx.query("INSERT INTO evidence_reporters (id, name, key_hash) VALUES ('evr_old', 'gw', 'k')");
      // As migration 9's store wrote them: the exchange, and its queue row without a copy.
      await tx.query(
        `WITH inserted AS (INSERT INTO evidence_exchanges (partner_id, reporter_id, at, kind, method, path, status,
           fingerprint, scopes_granted, expires_at) VALUES ('ptn_old', 'evr_old', $1, 'token', 'POST', '/oauth/token',
           200, 'fp', '["read:loans"]', $2) RETURNING id, partner_id, at)
         INSERT INTO evidence_queue (exchange_id, partner_id, at) SELECT id, partner_id, at FROM inserted`,
        [at, at + 60_000],
      );
      await tx.query("INSERT INTO evidence_cursors (partner_id) VALUES ('ptn_old')");
    });
    expect(await migrate(old)).toContain(10);
    const [claim] = await claimExchanges(old);
    expect(claim?.exchanges).toEqual([
      {
        at,
        partnerId: 'ptn_old',
        kind: 'token',
        method: 'POST',
        path: '/oauth/token',
        status: 200,
        reporterId: 'evr_old',
        fingerprint: 'fp',
        scopesGranted: ['read:loans'],
        expiresAt: at + 60_000,
      },
    ]);
  });
});
