import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../src/index.js';
import { ed25519Pem, inProcessService } from './support/in-process.js';
import { startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';
import { api, type CreatedRun } from './support/service.js';

// Two instances on one PostgreSQL serve one run, its calls alternating between them many at a time (each
// call served where the one before it was not: a takeover every call, the records of both in flight
// together), then one instance stops mid-run and the other takes the run over alone. Every call answered
// must be in the session once: none lost, none doubled, each number given once.

let postgres: ThrowawayPostgres;
let keyFile: string;

beforeAll(async () => {
  postgres = await startPostgres();
  keyFile = join(mkdtempSync(join(tmpdir(), 'pcs-key-')), 'signing-key.pem');
  writeFileSync(keyFile, ed25519Pem(), { mode: 0o600 });
});
afterAll(async () => {
  await postgres?.stop();
});

/** A refusal of the ledger's (the call was not recorded, so it is not answered): not an answer. */
const refused = (status: number, body: string) =>
  (status === 503 && body.includes('cannot record this call')) ||
  (status === 404 && body.includes('no open certification run'));

/**
 * What a session holds against the calls answered (by their `call` parameter): the answered calls
 * missing from it, the calls in it more than once, the numbers given more than once.
 */
function audit(answered: readonly number[], exchanges: readonly { seq: number; target?: string }[]) {
  const seen = new Map<number, number>();
  for (const exchange of exchanges) {
    const call = /[?&]call=(\d+)/.exec(exchange.target ?? '')?.[1];
    if (call !== undefined) seen.set(Number(call), (seen.get(Number(call)) ?? 0) + 1);
  }
  const seqs = exchanges.map((exchange) => exchange.seq);
  return {
    lost: answered.filter((call) => !seen.has(call)),
    doubled: [...seen].filter(([, times]) => times > 1).map(([call]) => call),
    seqsDoubled: seqs.filter((seq, index) => seqs.indexOf(seq) !== index),
  };
}

/**
 * Two instances (the first on `firstDb` when given) serve one run, 240 calls 16 at a time alternating
 * between them, the first stopped half-way: the calls answered (by their `call` parameter), the
 * session's exchanges, and the answers' statuses.
 */
async function takeover(name: string, firstDb?: (db: Database) => Database) {
  const database = await postgres.database(name);
  const own = firstDb
    ? await openDatabase({ databaseUrl: database, dataDir: mkdtempSync(join(tmpdir(), 'pcs-db-')) })
    : undefined;
  const a = await inProcessService({
    databaseUrl: database,
    keyFile,
    sweepIntervalMs: 60_000,
    ...(own && firstDb && { db: firstDb(own) }),
  });
  const b = await inProcessService({ databaseUrl: database, keyFile, sweepIntervalMs: 60_000 });
  let aOpen = true;
  try {
    const { apiKey } = await a.partner('Takeover Co');
    // A practice run with every scenario: the plan plays across the two as well.
    const run = (
      await api(a.service.url, apiKey, 'POST', '/api/runs', { ttlSeconds: 60 })
    ).json() as CreatedRun;
    const origins = [a.service.url, b.service.url].map((url) => new URL(url).origin);
    const at = (url: string, call: number) => {
      const parsed = new URL(url);
      const origin = aOpen ? origins[call % 2]! : origins[1]!;
      return `${origin}${parsed.pathname}${parsed.search}`;
    };
    let token: Promise<{ access_token: string; partnerId: string }> | undefined;
    const fresh = (call: number) =>
      fetch(at(run.tokenUrl, call), {
        method: 'POST',
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: run.clientId,
          client_secret: run.clientSecret,
        }),
      }).then(async (response) => {
        if (response.status !== 200) throw new Error(`token: ${response.status} ${await response.text()}`);
        return response.json() as Promise<{ access_token: string; partnerId: string }>;
      });
    const answered: number[] = [];
    const statuses: Record<string, number> = {};
    const total = 240;
    let next = 0;
    const worker = async () => {
      while (next < total) {
        const call = next++;
        // Half-way, the first instance stops: the second takes the run over alone.
        if (call === total / 2 && aOpen) {
          aOpen = false;
          await a.close();
        }
        token ??= fresh(call);
        const current = await token.catch(() => {
          token = undefined;
          return undefined;
        });
        if (!current) continue;
        const response = await fetch(
          at(`${run.baseUrl}/v3/partner/${current.partnerId}/loans?limit=5&call=${call}`, call),
          { headers: { authorization: `Bearer ${current.access_token}` } },
        ).catch(() => undefined);
        if (!response) continue;
        const body = await response.text();
        statuses[response.status] = (statuses[response.status] ?? 0) + 1;
        if (!refused(response.status, body)) answered.push(call);
        // The plan's revocation (or an expired token): the next call takes a new one.
        if (response.status === 401 && token) token = undefined;
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    expect(answered.length).toBeGreaterThan(total / 2);
    const judged = await api(b.service.url, apiKey, 'POST', `/api/runs/${run.id}/finish`, {});
    expect(judged.status).toBe(200);
    const session = (await api(b.service.url, apiKey, 'GET', `/api/runs/${run.id}/session`)).json();
    const exchanges = session.exchanges as { seq: number; target?: string }[];
    return { answered, exchanges, statuses };
  } finally {
    if (aOpen) await a.close();
    await own?.close();
    await b.close();
  }
}

describe('two instances on one PostgreSQL across a takeover', () => {
  it('never lose nor double an exchange answered, calls alternating and then one instance stopped', async () => {
    const { answered, exchanges, statuses } = await takeover('takeover');
    expect(answered.length).toBeGreaterThan(120);
    expect(audit(answered, exchanges), JSON.stringify(statuses)).toEqual({
      lost: [],
      doubled: [],
      seqsDoubled: [],
    });

    // Negative controls: the same audit finds an exchange missing, one recorded twice, a number
    // given twice.
    const withCall = exchanges.filter((exchange) => /[?&]call=\d+/.test(exchange.target ?? ''));
    const dropped = withCall[0]!;
    const missing = Number(/call=(\d+)/.exec(dropped.target!)![1]);
    expect(
      audit(
        answered,
        exchanges.filter((exchange) => exchange !== dropped),
      ).lost,
    ).toEqual([missing]);
    expect(audit(answered, [...exchanges, { ...dropped, seq: 1_000_000 }]).doubled).toEqual([missing]);
    expect(audit(answered, [...exchanges, { seq: dropped.seq }]).seqsDoubled).toEqual([dropped.seq]);
  }, 120_000);

  it('negative control: an instance that answers before its exchange is committed loses calls at the takeover', async () => {
    // The first instance's records are answered as kept and never reach the database (as if it died
    // right after answering, before its commit): the audit finds the calls it answered missing.
    const lying = (db: Database): Database =>
      Object.assign(Object.create(db) as Database, {
        query: async (text: string, params?: readonly unknown[]) =>
          text.includes('INSERT INTO exchanges') && Array.isArray(params?.[0])
            ? (params![0] as string[]).map((id) => ({ id }))
            : db.query(text, params),
      });
    const { answered, exchanges } = await takeover('negative', lying);
    expect(audit(answered, exchanges).lost.length).toBeGreaterThan(0);
  }, 120_000);
});
