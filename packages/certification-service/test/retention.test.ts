import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeExpired } from '../src/index.js';
import { type InProcessService, inProcessService } from './support/in-process.js';
import { startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';
import { api, type CreatedRun, runToken } from './support/service.js';

let postgres: ThrowawayPostgres;
beforeAll(async () => {
  postgres = await startPostgres();
});
afterAll(async () => {
  await postgres?.stop();
});

/** A practice run with one token request recorded, finished (judged). */
async function judgedRun(url: string, apiKey: string): Promise<CreatedRun> {
  const run = (await api(url, apiKey, 'POST', '/api/runs', { scenarios: [] })).json() as CreatedRun;
  const token = await runToken(run);
  expect(token.status).toBe(200);
  expect((await api(url, apiKey, 'POST', `/api/runs/${run.id}/finish`, {})).status).toBe(200);
  return run;
}

describe.each(['embedded', 'postgres'] as const)('retention on %s storage', (storage) => {
  let instance: InProcessService;
  beforeAll(async () => {
    instance = await inProcessService(
      storage === 'postgres' ? { databaseUrl: await postgres.database(`retention_${Date.now()}`) } : {},
    );
  });
  afterAll(async () => {
    await instance?.close();
  });

  it('purges what runs with no decision recorded after N days, keeps the digests, and keeps what a decision rests on', async () => {
    const { db, service } = instance;
    const { apiKey, partnerId } = await instance.partner('Retained Lending');
    const { reviewerId } = await instance.reviewer('Rita Reviewer');
    const [old, decided, recent, later] = [
      await judgedRun(service.url, apiKey),
      await judgedRun(service.url, apiKey),
      await judgedRun(service.url, apiKey),
      await judgedRun(service.url, apiKey),
    ];
    const attestation = (await api(service.url, apiKey, 'GET', `/api/runs/${old!.id}/attestation`)).text;
    const exchanges = async (id: string) =>
      Number(
        (await db.query<{ n: string }>('SELECT count(*) AS n FROM exchanges WHERE run_id = $1', [id]))[0]!.n,
      );
    expect(await exchanges(old!.id)).toBeGreaterThan(0);
    // Nothing is old yet: nothing goes.
    expect((await purgeExpired(db, 30)).runs).toEqual([]);

    const backDate = (id: string, days: number) =>
      db.query(`UPDATE runs SET finished_at = now() - make_interval(days => $2) WHERE id = $1`, [id, days]);
    await backDate(old!.id, 40);
    await backDate(decided!.id, 40);
    await backDate(later!.id, 40);
    // A decision rests on `decided` (the decisions table's id is a text id or a serial, by schema version).
    const [idColumn] = await db.query<{ data_type: string }>(
      "SELECT data_type FROM information_schema.columns WHERE table_name = 'decisions' AND column_name = 'id'",
    );
    await db.query(
      idColumn!.data_type === 'text'
        ? "INSERT INTO decisions (id, partner_id, run_id, reviewer_id, decision, note) VALUES ('dec_retention', $1, $2, $3, 'rejected', 'kept')"
        : "INSERT INTO decisions (partner_id, run_id, reviewer_id, decision, note) VALUES ($1, $2, $3, 'rejected', 'kept')",
      [partnerId, decided!.id, reviewerId],
    );
    // Forty days old, kept fifty: nothing goes either.
    expect((await purgeExpired(db, 50)).runs).toEqual([]);

    expect((await purgeExpired(db, 30)).runs.sort()).toEqual([old!.id, later!.id].sort());
    expect(await exchanges(old!.id)).toBe(0);
    const [row] = await db.query('SELECT * FROM runs WHERE id = $1', [old!.id]);
    expect(row).toMatchObject({
      session_text: null,
      report_json: null,
      report_html: null,
      attestation: null,
    });
    expect(row!.purged_at).not.toBeNull();
    expect(row!.verdict).toEqual(expect.any(String));
    for (const what of ['session', 'attestation', 'report.html']) {
      const gone = await api(service.url, apiKey, 'GET', `/api/runs/${old!.id}/${what}`);
      expect(gone.status, what).toBe(410);
      expect(gone.json().title).toBe('Purged by retention');
    }
    // Not yours, not told: another partner's key still gets 404.
    const other = await instance.partner('Other Lending');
    expect((await api(service.url, other.apiKey, 'GET', `/api/runs/${old!.id}/session`)).status).toBe(404);
    const [audit] = await db.query<{ actor: string; detail: Record<string, unknown> }>(
      "SELECT actor, detail FROM audit_log WHERE action = 'run.purged' AND subject = $1",
      [old!.id],
    );
    expect(audit!.actor).toBe('system:retention');
    expect(audit!.detail).toMatchObject({
      partnerId,
      attestationSha256: createHash('sha256').update(attestation).digest('hex'),
      sessionSha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });

    // Kept: the run a decision rests on, and the recent one — everything of them still served.
    for (const run of [decided!, recent!]) {
      expect(await exchanges(run.id)).toBeGreaterThan(0);
      for (const what of ['session', 'attestation', 'report.html'])
        expect((await api(service.url, apiKey, 'GET', `/api/runs/${run.id}/${what}`)).status).toBe(200);
    }
    // A second purge finds nothing left to do.
    expect((await purgeExpired(db, 30)).runs).toEqual([]);

    // The service's own sweeper (serve --retain-days) purges at start.
    await backDate(recent!.id, 40);
    const sweeping = await inProcessService({ db, retainDays: 30 });
    try {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const [state] = await db.query<{ purged_at: unknown }>('SELECT purged_at FROM runs WHERE id = $1', [
          recent!.id,
        ]);
        if (state!.purged_at) break;
        if (Date.now() > deadline) throw new Error('the sweeper did not purge the run in 30 s');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(sweeping.lines.some((line) => /retention: purged .* 1 runs/.test(line))).toBe(true);
    } finally {
      await sweeping.close();
    }
    expect(await exchanges(decided!.id)).toBeGreaterThan(0);
  });
});
