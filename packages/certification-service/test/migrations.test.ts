import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, migrate, migrations, openDatabase } from '../src/index.js';
import { startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';

// Migration 2 reshapes the decisions of a store that shipped with migration 1: its rows are kept.
let postgres: ThrowawayPostgres;
beforeAll(async () => {
  postgres = await startPostgres();
}, 120_000);
afterAll(async () => {
  await postgres?.stop();
});

describe.each(['embedded', 'postgres'] as const)('migration 2 on %s storage', (storage) => {
  let db: Database;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pcs-migrate-'));
    db = await openDatabase({
      databaseUrl: storage === 'postgres' ? await postgres.database(`migrate_${Date.now()}`) : undefined,
      dataDir: join(dir, 'data'),
    });
  }, 120_000);
  afterAll(async () => {
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps the decisions recorded under migration 1, with text ids, and takes the new kinds of decision', async () => {
    // The store as migration 1 left it, with one decision.
    const first = migrations.find((item) => item.id === 1)!;
    await db.transaction(async (tx) => {
      await tx.query(
        'CREATE TABLE schema_migrations (id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
      );
      for (const statement of first.sql
        .split(/;\s*\n/)
        .map((item) => item.trim())
        .filter(Boolean))
        await tx.query(statement);
      await tx.query("INSERT INTO schema_migrations (id, name) VALUES (1, 'partners')");
      await tx.query("INSERT INTO partners (id, name, api_key_hash) VALUES ('ptn_a', 'A', 'h1')");
      await tx.query("INSERT INTO reviewers (id, name, credential_hash) VALUES ('rev_a', 'Rita', 'h2')");
      await tx.query(
        `INSERT INTO runs (id, partner_id, status, started_epoch_ms, expires_at, idle_seconds, certify, stage, client_id,
           max_exchanges, scenario_state) VALUES ('run_a', 'ptn_a', 'judged', 0, now(), 600, true, '{}', 'c', 10, '{}')`,
      );
      await tx.query(
        "INSERT INTO decisions (partner_id, run_id, reviewer_id, decision, note) VALUES ('ptn_a', 'run_a', 'rev_a', 'approved', 'ok')",
      );
    });
    expect(await migrate(db)).toContain(2);
    // The run's scenario state moved to its own row (migration 11).
    expect(await db.query('SELECT run_id, state FROM run_scenarios')).toEqual([
      { run_id: 'run_a', state: {} },
    ]);
    const rows = await db.query<Record<string, unknown>>('SELECT * FROM decisions');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      id: 'dec_legacy_1',
      partner_id: 'ptn_a',
      run_id: 'run_a',
      reviewer_id: 'rev_a',
      decision: 'approved',
      note: 'ok',
      scopes: [],
      valid_until: null,
    });
    // A decision of the service itself (no reviewer), of a kind migration 1 refused.
    await db.query(
      "INSERT INTO decisions (id, partner_id, run_id, reviewer_id, decision, note) VALUES ('dec_x', 'ptn_a', 'run_a', NULL, 'expired', 'validity ended')",
    );
    // The control: a decision outside the four kinds is still refused.
    await expect(
      db.query(
        "INSERT INTO decisions (id, partner_id, run_id, decision, note) VALUES ('dec_y', 'ptn_a', 'run_a', 'maybe', 'x')",
      ),
    ).rejects.toThrow();
    expect(await migrate(db)).toEqual([]);
  });

  it("leaves half of each page of runs free for the rows' next versions (migration 6)", async () => {
    await migrate(db);
    const [runs] = await db.query<{ reloptions: string[] | null }>(
      "SELECT reloptions FROM pg_class WHERE relname = 'runs' AND relkind = 'r'",
    );
    expect(runs?.reloptions).toEqual(['fillfactor=50']);
  });
});
