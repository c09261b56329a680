import type { ScenarioName, ScenarioState } from '@partner-lending/conformance';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../src/index.js';
import { openJournal } from '../src/recording/journal.js';
import { databaseLedger, storableJson } from '../src/recording/ledger.js';
import { claimRun } from '../src/runs/judge.js';
import { type InProcessService, inProcessService } from './support/in-process.js';
import { startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';
import { api, type CreatedRun } from './support/service.js';

// The statements every call makes, on both stores: recording (grouped across runs, capped per run,
// refused for a run that ended) and numbering (in memory on the embedded store, which one process
// owns; in the database on PostgreSQL, which instances share).
let postgres: ThrowawayPostgres;
beforeAll(async () => {
  postgres = await startPostgres();
}, 60_000);
afterAll(async () => {
  await postgres?.stop();
});

const exchange = (seq: number) => JSON.stringify({ seq, server: 'api', method: 'GET', status: 200 });

describe.each(['embedded', 'postgres'] as const)('the run journal on %s storage', (storage) => {
  let svc: InProcessService;
  let apiKey: string;
  let databaseUrl: string | undefined;
  beforeAll(async () => {
    databaseUrl = storage === 'postgres' ? await postgres.database('journal') : undefined;
    svc = await inProcessService({
      ...(databaseUrl && { databaseUrl }),
      limits: { maxOpenRunsPerPartner: 50, maxRunsPerHour: 100 },
    });
    ({ apiKey } = await svc.partner('Journal'));
  }, 60_000);
  afterAll(async () => {
    await svc?.close();
  });
  const newRun = async () => {
    const created = await api(svc.service.url, apiKey, 'POST', '/api/runs', {});
    expect(created.status).toBe(201);
    return (created.json() as CreatedRun).id;
  };
  const stored = async (db: Database, id: string) => {
    const [run] = await db.query<{ recorded: number; dropped: number; seq: number }>(
      'SELECT recorded, dropped, seq FROM runs WHERE id = $1',
      [id],
    );
    const rows = await db.query<{ seq: number }>('SELECT seq FROM exchanges WHERE run_id = $1 ORDER BY seq', [
      id,
    ]);
    return { ...run!, seqs: rows.map((row) => row.seq) };
  };

  it('records the calls of several runs in one statement: each run up to its cap, a run that ended refused, the others kept', async () => {
    const [capped, plain, ended] = [await newRun(), await newRun(), await newRun()];
    await svc.db.query('UPDATE runs SET max_exchanges = 3 WHERE id = $1', [capped]);
    await api(svc.service.url, apiKey, 'POST', `/api/runs/${ended}/finish`, {});
    const journal = openJournal(svc.db);
    // Issued in one turn of the event loop: one batch.
    const results = await Promise.all([
      ...[1, 2, 3, 4, 5].map((seq) => journal.record(capped, seq, exchange(seq))),
      ...[1, 2].map((seq) => journal.record(plain, seq, exchange(seq))),
      journal.record(ended, 1, exchange(1)),
    ]);
    expect(results).toEqual([true, true, true, true, true, true, true, false]);
    // The first three in arrival order are kept; the other two counted. The run's number is the highest.
    expect(await stored(svc.db, capped)).toEqual({ recorded: 3, dropped: 2, seq: 5, seqs: [1, 2, 3] });
    expect(await stored(svc.db, plain)).toEqual({ recorded: 2, dropped: 0, seq: 2, seqs: [1, 2] });
    const [closed] = await svc.db.query<{ status: string }>('SELECT status FROM runs WHERE id = $1', [ended]);
    expect(closed!.status).toBe('judged');
    expect((await stored(svc.db, ended)).seqs).toEqual([]);
    // Later calls of the capped run are counted, never kept.
    expect(await journal.record(capped, 6, exchange(6))).toBe(true);
    expect(await stored(svc.db, capped)).toEqual({ recorded: 3, dropped: 3, seq: 6, seqs: [1, 2, 3] });
  });

  it("one call's bad data fails no other call of its batch; a NUL in a body is kept as visible text", async () => {
    const [hostile, other] = [await newRun(), await newRun()];
    const journal = openJournal(svc.db);
    const nul = JSON.stringify({ seq: 1, body: { text: 'a\u0000b \\u0000 c' } });
    // Unsanitised, jsonb refuses it: that item alone fails, the other run's call in the batch is kept.
    const [refused, kept] = await Promise.allSettled([
      journal.record(hostile, 1, nul),
      journal.record(other, 1, exchange(1)),
    ]);
    expect(refused.status).toBe('rejected');
    expect(kept).toEqual({ status: 'fulfilled', value: true });
    expect((await stored(svc.db, other)).seqs).toEqual([1]);
    // As the ledger stores it: the NUL becomes the six characters \u0000; a typed backslash stays.
    expect(await journal.record(hostile, 1, storableJson(nul))).toBe(true);
    const [row] = await svc.db.query<{ exchange: { body: { text: string } } }>(
      'SELECT exchange FROM exchanges WHERE run_id = $1',
      [hostile],
    );
    expect(row!.exchange.body.text).toBe('a\\u0000b \\u0000 c');
  });

  it('plays the scenario plan once, as the local stage does: what fired is stored with the calls, a revoked token stays refused, and a run without scenarios fires nothing', async () => {
    const created = await api(svc.service.url, apiKey, 'POST', '/api/runs', {});
    const plain = await api(svc.service.url, apiKey, 'POST', '/api/runs', { scenarios: [] });
    const runs = [created.json() as CreatedRun, plain.json() as CreatedRun];
    const token = async (run: CreatedRun) => {
      const answer = await fetch(run.tokenUrl, {
        method: 'POST',
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: run.clientId,
          client_secret: run.clientSecret,
          scope: 'read:loans',
        }),
      });
      expect(answer.status).toBe(200);
      return (await answer.json()) as { access_token: string; partnerId: string };
    };
    const statuses: number[][] = [];
    for (const run of runs) {
      const first = await token(run);
      const call = async (value: string) =>
        (
          await fetch(`${run.baseUrl}/v3/partner/${first.partnerId}/loans?limit=5`, {
            headers: { authorization: `Bearer ${value}` },
          })
        ).status;
      const seen: number[] = [];
      // Eleven calls, the first four at once: the plan decides each once, in arrival order.
      seen.push(...(await Promise.all([1, 2, 3, 4].map(() => call(first.access_token)))));
      const second = await token(run);
      for (let index = 0; index < 6; index += 1) seen.push(await call(second.access_token));
      // The revoked token is refused after the plan has settled too (decided with no lock then).
      seen.push(await call(first.access_token));
      statuses.push(seen);
    }
    const [withPlan, without] = statuses;
    // The 3rd eligible call revoked its token: it and the 4th (same token, not eligible) get 401; the
    // 6th eligible (the 3rd with the new token) is throttled; every other call 200, and the first token
    // is still refused at the end.
    expect(withPlan!.slice(0, 4).sort()).toEqual([200, 200, 401, 401]);
    expect(withPlan!.slice(4)).toEqual([200, 200, 429, 200, 200, 200, 401]);
    expect(without).toEqual(Array(11).fill(200));
    // Stored with the calls: which steps fired, at which call; the revoked token is stored revoked.
    const [row] = await svc.db.query<{ scenario_state: { records: { name: string; seq?: number }[] } }>(
      'SELECT state AS scenario_state FROM run_scenarios WHERE run_id = $1',
      [runs[0]!.id],
    );
    const fired = Object.fromEntries(
      row!.scenario_state.records
        .filter((item) => item.seq !== undefined)
        .map((item) => [item.name, item.seq]),
    );
    expect(Object.keys(fired).sort()).toEqual(['revocation', 'throttle']);
    const revoked = await svc.db.query<{ number: number }>(
      "SELECT number FROM run_tokens WHERE run_id = $1 AND token ? 'revokedAt'",
      [runs[0]!.id],
    );
    expect(revoked.map((item) => item.number)).toEqual([1]);
    const [plainRow] = await svc.db.query<{ scenario_state: { records: { seq?: number }[] } }>(
      'SELECT state AS scenario_state FROM run_scenarios WHERE run_id = $1',
      [runs[1]!.id],
    );
    expect(plainRow!.scenario_state.records.filter((item) => item.seq !== undefined)).toEqual([]);
  });

  if (storage === 'embedded')
    it('numbers in memory from the highest number recorded, so a restarted instance goes on after it', async () => {
      const id = await newRun();
      const journal = openJournal(svc.db);
      expect(journal.exclusive).toBe(true);
      const first = await Promise.all([1, 2, 3].map(() => journal.nextSeq(id, 0)));
      expect(first).toEqual([1, 2, 3]);
      // Calls 1 and 3 were answered and recorded; call 2 was in flight when the process died.
      await Promise.all([journal.record(id, 1, exchange(1)), journal.record(id, 3, exchange(3))]);
      const { seq } = await stored(svc.db, id);
      expect(seq).toBe(3);
      const restarted = openJournal(svc.db);
      expect(await restarted.nextSeq(id, seq)).toBe(4);
    });

  if (storage === 'postgres')
    it('plays the plan once across two instances playing the same calls at once: a step written over a state another instance moved on from is refused and played again on the new one', async () => {
      const id = await newRun();
      const [row] = await svc.db.query<{
        stage: { enabled: ScenarioName[]; grant: string[]; partnerId: string };
        scenario_state: ScenarioState;
      }>(
        'SELECT r.stage, s.state AS scenario_state FROM runs r JOIN run_scenarios s ON s.run_id = r.id WHERE r.id = $1',
        [id],
      );
      const { stage, scenario_state: initial } = row!;
      expect(stage.enabled).toEqual(expect.arrayContaining(['revocation', 'throttle']));
      const other = await openDatabase({ databaseUrl, dataDir: '' });
      try {
        // Two instances, each with its own pool and journal; each journal's writes of the scenario
        // state are counted: written, or refused because the row held another state.
        const writes: boolean[] = [];
        // The statements each instance sends (reads and writes alike).
        const statements = [0, 0, 0];
        const ledgerOn = (plain: Database, index: number) => {
          const db: Database = {
            ...plain,
            query: (text, params) => {
              statements[index]! += 1;
              return plain.query(text, params);
            },
            queryUnflushed: (text, params) => {
              statements[index]! += 1;
              return plain.queryUnflushed(text, params);
            },
          };
          const journal = openJournal(db);
          return databaseLedger(
            db,
            {
              ...journal,
              play: async (runId, change) => {
                const written = await journal.play(runId, change);
                writes.push(written);
                return written;
              },
            },
            { id, enabled: new Set(stage.enabled), grant: stage.grant, seq: 0, state: initial },
          );
        };
        const ledgers = [ledgerOn(svc.db, 0), ledgerOn(other, 1)];
        const draft = (value: string) => ({
          value,
          token: {
            seq: 1,
            issuedAt: 0,
            expAt: 3_600_000,
            expiresIn: 3600,
            scope: ['read:loans'],
            partnerId: stage.partnerId,
            last6: value.slice(-6),
            phase: 'short' as const,
          },
        });
        const path = `/v3/partner/${stage.partnerId}/loans`;
        const onBoth = async (value: string) => {
          const issued = await ledgers[0]!.issue(draft(value));
          return [issued, (await ledgers[1]!.tokensByValue([value])).get(value)!];
        };
        const first = await onBoth('first-token-value-0001');
        // Eight calls with the first token, four on each instance, all at once: the 3rd eligible call
        // revokes it, and every later call with it is refused as revoked (played once, not twice).
        const played = await Promise.all(
          Array.from({ length: 8 }, (_, index) =>
            ledgers[index % 2]!.play('GET', path, first[index % 2], 1000, 1000, index + 1),
          ),
        );
        expect(played.filter((injected) => injected === undefined)).toHaveLength(2);
        expect(played.filter((injected) => injected === 'revoked')).toHaveLength(6);
        // Not vacuous: the two instances did write over each other's state, and were refused.
        expect(writes).toContain(false);
        expect(writes).toContain(true);
        // A revoked token changes nothing: a third instance, which knows nothing of the revocation, reads
        // the run's state (and the token) for a call with the copy read before it (not marked revoked) …
        const third = ledgerOn(other, 2);
        expect(first[1]!.revokedAt).toBeUndefined();
        expect(await third.play('GET', path, first[1]!, 1500, 1500, 100)).toBe('revoked');
        expect(statements[2]).toBeGreaterThan(0);
        // … and refuses the next call with that token with no statement, as it does a call with the
        // token read again, which says itself that it was revoked.
        let sent = statements[2]!;
        expect(await third.play('GET', path, first[1]!, 1500, 1500, 101)).toBe('revoked');
        expect(statements[2], 'a call with a token seen revoked sent a statement').toBe(sent);
        const revokedCopy = (await third.tokensByValue(['first-token-value-0001'])).get(
          'first-token-value-0001',
        )!;
        expect(revokedCopy.revokedAt).toBeDefined();
        sent = statements[2]!;
        expect(await third.play('GET', path, revokedCopy, 1500, 1500, 102)).toBe('revoked');
        expect(statements[2], 'a call with a token read as revoked sent a statement').toBe(sent);
        // Six calls with a second token: the 6th eligible call of the run is throttled, once.
        const second = await onBoth('second-token-value-0002');
        const next = await Promise.all(
          Array.from({ length: 6 }, (_, index) =>
            ledgers[index % 2]!.play('GET', path, second[index % 2], 2000, 2000, 9 + index),
          ),
        );
        expect(next.filter((injected) => injected === 'throttled')).toHaveLength(1);
        expect(next.filter((injected) => injected === undefined)).toHaveLength(5);
        // Stored: each step fired once, the first token revoked and the second not.
        const [after] = await svc.db.query<{ scenario_state: ScenarioState }>(
          'SELECT state AS scenario_state FROM run_scenarios WHERE run_id = $1',
          [id],
        );
        const fired = after!.scenario_state.records.filter((item) => item.seq !== undefined);
        expect(fired.map((item) => item.name).sort()).toEqual(['revocation', 'throttle']);
        const revoked = await svc.db.query<{ number: number }>(
          "SELECT number FROM run_tokens WHERE run_id = $1 AND token ? 'revokedAt'",
          [id],
        );
        expect(revoked.map((item) => item.number)).toEqual([1]);
        // A write expecting a state the row no longer holds is refused, and so is one on an ended run.
        const journal = openJournal(svc.db);
        const current = JSON.stringify(after!.scenario_state);
        expect(await journal.play(id, { before: JSON.stringify(initial), after: current })).toBe(false);
        expect(await journal.play(id, { before: current, after: current })).toBe(true);
        await api(svc.service.url, apiKey, 'POST', `/api/runs/${id}/finish`, {});
        expect(await journal.play(id, { before: current, after: current })).toBe(false);
      } finally {
        await other.close();
      }
    });

  if (storage === 'postgres')
    it("plays a step while a record holds the run's row (a play never waits for a record's commit), and none once judging has claimed the run", async () => {
      const id = await newRun();
      const [row] = await svc.db.query<{ state: ScenarioState }>(
        'SELECT state FROM run_scenarios WHERE run_id = $1',
        [id],
      );
      const before = JSON.stringify(row!.state);
      const after = JSON.stringify({ ...row!.state, marker: 1 });
      const journal = openJournal(svc.db);
      // A record batch holds its runs' rows until its commit has waited for the disk: here, held open.
      const played = await svc.db.transaction(async (tx) => {
        await tx.query('UPDATE runs SET recorded = recorded, last_activity_at = now() WHERE id = $1', [id]);
        let timer: NodeJS.Timeout | undefined;
        try {
          return await Promise.race([
            journal.play(id, { before, after }),
            new Promise<'held'>((resolve) => {
              timer = setTimeout(() => resolve('held'), 10_000);
            }),
          ]);
        } finally {
          clearTimeout(timer);
        }
      });
      expect(played).toBe(true);
      // Judging's claim (its statement, in a transaction held open): a play waits for it, then finds the
      // run closing and writes nothing, where a play it did not lock out would have found it open.
      const pending = await svc.db.transaction(async (tx) => {
        expect(await tx.query(claimRun, [id])).toHaveLength(1);
        const play = journal.play(id, { before: after, after: before });
        await new Promise((resolve) => setTimeout(resolve, 200));
        return { play };
      });
      expect(await pending.play).toBe(false);
      const [kept] = await svc.db.query<{ state: unknown }>(
        'SELECT state FROM run_scenarios WHERE run_id = $1',
        [id],
      );
      expect(kept!.state).toEqual(JSON.parse(after));
    });

  if (storage === 'postgres')
    it('numbers in the database when instances share it: every run 1..N with no gap and no repeat, with no deadlock', async () => {
      const ids = [await newRun(), await newRun(), await newRun(), await newRun()];
      // Two instances (two pools), each numbering every run, in opposite orders, many calls at once.
      const other = await openDatabase({ databaseUrl, dataDir: '' });
      try {
        const journals = [openJournal(svc.db), openJournal(other)];
        expect(journals.map((journal) => journal.exclusive)).toEqual([false, false]);
        const given = await Promise.all(
          Array.from({ length: 200 }, (_, index) => {
            const journal = journals[index % 2]!;
            const order = index % 2 === 0 ? ids : [...ids].reverse();
            const id = order[Math.floor(index / 2) % ids.length]!;
            return journal.nextSeq(id, 0).then((seq) => ({ id, seq }));
          }),
        );
        for (const id of ids) {
          const numbers = given
            .filter((item) => item.id === id)
            .map((item) => item.seq!)
            .sort((a, b) => a - b);
          expect(numbers).toEqual(Array.from({ length: 50 }, (_, index) => index + 1));
        }
        // Numbering does not wait for the disk; everything else does (recording above all).
        const setting = async (query: Database['query']) =>
          (await query<{ synchronous_commit: string }>('SHOW synchronous_commit'))[0]!.synchronous_commit;
        expect(await setting(svc.db.queryUnflushed)).toBe('off');
        expect(await setting(svc.db.query)).toBe('on');
        // A run that ended is numbered no more.
        await api(svc.service.url, apiKey, 'POST', `/api/runs/${ids[0]}/finish`, {});
        expect(await journals[1]!.nextSeq(ids[0]!, 0)).toBeUndefined();
      } finally {
        await other.close();
      }
    });
});
