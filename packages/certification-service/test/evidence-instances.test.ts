import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queuedExchange, storeBatch } from '../src/evidence/store.js';
import {
  addEvidenceReporter,
  addPartner,
  claimExchanges,
  type Database,
  EvidenceLeaseLost,
  migrate,
  openDatabase,
} from '../src/index.js';
import { exchangeAttributes, otlpJson, postEvidence } from './support/evidence.js';
import { ed25519Pem, type InProcessService, inProcessService } from './support/in-process.js';
import { startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';

// Two instances on one PostgreSQL: judging's hand-out gives each exchange once, in order per partner,
// whichever instance claims; an exchange whose transaction commits after a later one's is still handed
// out; and a database that fails is answered 503 with Retry-After, never with the driver's words. The
// hand-out is tested on a database of its own through two pools (two instances' connections), where no
// service's own regression watch claims beside the test.
let postgres: ThrowawayPostgres;
const instances: InProcessService[] = [];
let key: string;
const partners: string[] = [];
/** Two pools on the hand-out's database, as two instances have, and its reporter. */
const pools: Database[] = [];
const handoutPartners: string[] = [];
let reporterId: string;
const at = Date.UTC(2026, 10, 3, 8, 0, 0);

beforeAll(async () => {
  postgres = await startPostgres();
  const databaseUrl = await postgres.database('evidence');
  const keyFile = join(mkdtempSync(join(tmpdir(), 'pcs-key-')), 'signing-key.pem');
  writeFileSync(keyFile, ed25519Pem(), { mode: 0o600 });
  for (let i = 0; i < 2; i += 1) instances.push(await inProcessService({ databaseUrl, keyFile }));
  for (const name of ['Acme', 'Bolt', 'Cobalt']) partners.push((await instances[0]!.partner(name)).partnerId);
  ({ key } = await addEvidenceReporter(instances[0]!.db, 'gateway'));
  const handoutUrl = await postgres.database('handout');
  const dir = mkdtempSync(join(tmpdir(), 'pcs-handout-'));
  for (let i = 0; i < 2; i += 1) pools.push(await openDatabase({ databaseUrl: handoutUrl, dataDir: dir }));
  await migrate(pools[0]!);
  for (const name of ['Acme', 'Bolt', 'Cobalt'])
    handoutPartners.push((await addPartner(pools[0]!, name)).partnerId);
  ({ reporterId } = await addEvidenceReporter(pools[0]!, 'gateway'));
}, 120_000);
afterAll(async () => {
  for (const pool of pools) await pool.close();
  for (const instance of instances) await instance.close();
  await postgres?.stop();
});

/** Stores `perPartner` exchanges for each partner, ten a batch, batches alternating between the pools, newest first. */
async function send(perPartner: number, offset: number): Promise<void> {
  const batches: Array<Array<{ at: number; partnerId: string }>> = [];
  for (const partnerId of handoutPartners)
    for (let first = 0; first < perPartner; first += 10)
      batches.push(
        Array.from({ length: Math.min(10, perPartner - first) }, (_, index) => ({
          at: at + offset + first + index,
          partnerId,
        })),
      );
  batches.reverse();
  await Promise.all(
    batches.map((records, index) =>
      storeBatch(pools[index % 2]!, {
        reporterId,
        batchId: `batch-${offset}-${index}`,
        rejected: 0,
        exchanges: records.map((record) => ({
          ...record,
          kind: 'api' as const,
          method: 'GET',
          path: `/n/${record.at - at}`,
          status: 200,
        })),
      }),
    ),
  );
}

/** Claims on one instance until nothing is left, committing each claim; what it was handed, in commit order. */
async function drain(db: Database, handed: string[], perPartner: Map<string, number[]>): Promise<number> {
  let mine = 0;
  for (let empty = 0; empty < 3; ) {
    const claims = await claimExchanges(db, { partners: 2, perPartner: 7 });
    if (claims.length === 0) {
      empty += 1;
      continue;
    }
    for (const claim of claims) {
      const before = (claim.state as { seen?: number } | undefined)?.seen ?? 0;
      await claim.commit({ seen: before + claim.exchanges.length });
      mine += claim.exchanges.length;
      for (const exchange of claim.exchanges) {
        handed.push(`${exchange.partnerId}@${exchange.at}`);
        perPartner.set(exchange.partnerId, [...(perPartner.get(exchange.partnerId) ?? []), exchange.at]);
      }
    }
  }
  return mine;
}

describe('the hand-out to judging, on two instances', () => {
  it('gives every exchange once, in at order per partner, while both claim at once', async () => {
    await send(40, 0);
    const handed: string[] = [];
    const perPartner = new Map<string, number[]>();
    const byPool = await Promise.all(pools.map((pool) => drain(pool, handed, perPartner)));
    // Both claimed a share (they ran at once), and together every exchange.
    expect(byPool.every((count) => count > 0)).toBe(true);
    expect(handed).toHaveLength(120);
    expect(new Set(handed).size).toBe(120);
    for (const partnerId of handoutPartners) {
      const seen = perPartner.get(partnerId)!;
      expect(seen).toEqual([...seen].sort((a, b) => a - b));
    }
    const states = await pools[1]!.query<{ state: { seen: number } }>(
      'SELECT state FROM evidence_cursors ORDER BY partner_id',
    );
    expect(states.map((row) => row.state.seen)).toEqual([40, 40, 40]);
  });

  it('would hand an exchange out twice without a lease, and then refuses the first commit (control)', async () => {
    await send(5, 1000);
    const [first] = await claimExchanges(pools[0]!, { partners: 1, leaseMs: 0 });
    const [second] = await claimExchanges(pools[1]!, { partners: 1, leaseMs: 0 });
    expect(second!.partnerId).toBe(first!.partnerId);
    expect(second!.exchanges).toEqual(first!.exchanges);
    await expect(first!.commit({ seen: 0 })).rejects.toBeInstanceOf(EvidenceLeaseLost);
    await second!.commit(second!.state);
    // With the lease (the default), the other instance is handed nothing of that partner meanwhile.
    const claims = await claimExchanges(pools[0]!, { partners: 3 });
    expect(claims.map((claim) => claim.partnerId)).not.toContain(first!.partnerId);
    const again = await claimExchanges(pools[1]!, { partners: 3 });
    expect(
      again.map((claim) => claim.partnerId).filter((id) => claims.some((claim) => claim.partnerId === id)),
    ).toEqual([]);
    for (const claim of [...claims, ...again]) await claim.commit(claim.state);
  });

  it('hands out an exchange whose transaction commits after a later id was judged', async () => {
    const partnerId = handoutPartners[0]!;
    let letGo!: () => void;
    const held = new Promise<void>((resolve) => (letGo = resolve));
    let earlyId = 0;
    let inserted!: () => void;
    const insertedNow = new Promise<void>((resolve) => (inserted = resolve));
    // A batch whose transaction takes its id first and commits last.
    const slow = pools[0]!.transaction(async (tx) => {
      const [row] = await tx.query<{ id: string }>(
        `INSERT INTO evidence_exchanges (partner_id, reporter_id, at, kind, method, path, status)
         SELECT $1, id, $2, 'api', 'GET', '/late', 200 FROM evidence_reporters LIMIT 1 RETURNING id`,
        [partnerId, at + 5000],
      );
      earlyId = Number(row!.id);
      await tx.query(
        `INSERT INTO evidence_queue (exchange_id, partner_id, at, exchange)
         SELECT id, partner_id, at, ${queuedExchange} FROM evidence_exchanges WHERE id = $1`,
        [row!.id],
      );
      inserted();
      await held;
    });
    await insertedNow;
    await storeBatch(pools[1]!, {
      reporterId,
      batchId: 'early',
      rejected: 0,
      exchanges: [{ at: at + 6000, partnerId, kind: 'api', method: 'GET', path: '/early', status: 200 }],
    });
    const [later] = await claimExchanges(pools[1]!, { partners: 3 });
    expect(later!.exchanges.map((exchange) => exchange.path)).toEqual(['/early']);
    await later!.commit(later!.state);
    const laterId = (
      await pools[1]!.query<{ id: string }>("SELECT id FROM evidence_exchanges WHERE path = '/early'")
    )[0]!.id;
    expect(earlyId).toBeLessThan(Number(laterId));
    letGo();
    await slow;
    const [late] = await claimExchanges(pools[0]!, { partners: 3 });
    expect(late!.exchanges.map((exchange) => exchange.path)).toEqual(['/late']);
    await late!.commit(late!.state);
  });
});

describe('POST /evidence while the database fails', () => {
  it('answers 503 with Retry-After and no word of the driver, then takes the batch once the database is back', async () => {
    const body = otlpJson([
      { at: at + 9000, attributes: exchangeAttributes(partners[1]!, { 'url.path': '/outage' }) },
    ]);
    await postgres.halt();
    try {
      const answer = await postEvidence(instances[0]!.service.url, body, { key });
      expect(answer.status).toBe(503);
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0);
      const text = await answer.text();
      expect(text).not.toMatch(/ECONNREFUSED|connect|postgres|127\.0\.0\.1|terminat/i);
    } finally {
      await postgres.resume();
    }
    let status = 0;
    for (let attempt = 0; attempt < 50 && status !== 200; attempt += 1) {
      status = (await postEvidence(instances[0]!.service.url, body, { key })).status;
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(status).toBe(200);
  });
});
