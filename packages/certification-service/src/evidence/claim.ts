import { randomBytes } from 'node:crypto';
import type { Database, Queryable } from '../db/types.js';
import { ServiceError, UsageError } from '../errors.js';
import type { Exchange } from './exchange.js';
import { exchangeFromQueue } from './store.js';

/**
 * Judging's side of production evidence: each exchange stored is handed out once, per partner, in
 * `at` order, across every instance sharing the database.
 *
 * How a judge uses it (one loop per instance, e.g. in its sweep):
 *
 * ```ts
 * for (const claim of await claimExchanges(db, { partners: 16 })) {
 *   const judge = createPartnerJudge(claim.partnerId, { state: claim.state });
 *   const findings = judge.observe(claim.exchanges);
 *   await claim.commit(judge.state(), (tx) => storeFindings(tx, findings)); // or claim.release()
 * }
 * ```
 *
 * - A claim holds its partner's lease (`leaseMs`, default 60 s) from the claim to `commit` or
 *   `release`: no other instance claims that partner meanwhile, so a partner is judged by one instance at
 *   a time and its exchanges in order.
 * - `exchanges` are the partner's oldest exchanges not yet judged (at most `perPartner`), ordered by
 *   `at` then arrival. An exchange that arrives after later ones were judged (a reporter's late batch)
 *   comes in a later claim: `at` may then go back, and the judge decides what that means.
 * - `state` is the JSON the partner's judge committed last (undefined at first): `commit(state)` stores
 *   it and removes the handed-out exchanges from the queue in one transaction, with whatever `write`
 *   does (the findings, say) in that same transaction — so a judgement counts once or not at all.
 * - A claim neither committed nor released (a crash, an error) comes back once its lease has run out,
 *   to any instance, with the same exchanges (and any that arrived since) and the last committed state.
 *   A commit after its lease ran out and another instance claimed the partner is refused
 *   (`EvidenceLeaseLost`) and changes nothing: only the later claim's commit counts.
 *
 * Nothing relies on the order in which bigserial ids commit: the queue is drained by what is visible
 * (rows deleted by id at commit), never by "every id above the last one judged".
 */
export interface PartnerEvidence {
  readonly partnerId: string;
  readonly exchanges: readonly Exchange[];
  /** The judge's state as last committed, or undefined before the first commit. */
  readonly state: unknown;
  /** True when the claim is full (`perPartner` exchanges): more of the partner's may be waiting. */
  readonly backlog: boolean;
  /** Stores `state` (JSON, at most 1 MiB), marks `exchanges` judged, and runs `write` in the same transaction. */
  commit(state: unknown, write?: (tx: Queryable) => Promise<void>): Promise<void>;
  /**
   * `commit` in the caller's transaction `tx` (so that one transaction commits several partners: the
   * watch's round). The claim counts as committed only if `tx` commits; if it rolls back, the claim runs
   * out its lease and the same exchanges are handed out again.
   */
  commitIn(tx: Queryable, state: unknown, write?: (tx: Queryable) => Promise<void>): Promise<void>;
  /** Gives the partner back without judging: its exchanges are handed out again at the next claim. */
  release(): Promise<void>;
}

/** The claim's lease ran out and another instance claimed the partner: nothing was committed. */
export class EvidenceLeaseLost extends ServiceError {
  constructor(partnerId: string) {
    super(
      'ERR_EVIDENCE_LEASE_LOST',
      `the claim on ${partnerId}'s evidence was lost (its lease ran out and another instance claimed it): nothing was committed; judge faster or claim fewer exchanges`,
    );
    this.name = 'EvidenceLeaseLost';
  }
}

/** The largest judge state `commit` stores, in bytes of JSON. */
export const maxJudgeStateBytes = 1024 * 1024;

/**
 * Claims up to `partners` partners with exchanges not yet judged (those judged longest ago first), and
 * for each up to `perPartner` of its exchanges. See `PartnerEvidence`.
 */
export async function claimExchanges(
  db: Database,
  options: { partners?: number; perPartner?: number; leaseMs?: number } = {},
): Promise<PartnerEvidence[]> {
  const partners = options.partners ?? 16;
  const perPartner = options.perPartner ?? 1000;
  const leaseMs = options.leaseMs ?? 60_000;
  const lease = randomBytes(16).toString('base64url');
  await vacuumIfDue(db);
  const claimed = await db.transaction(async (tx) => {
    const cursors = await tx.query<{ partner_id: string; state: unknown }>(
      `SELECT partner_id, state FROM evidence_cursors c
       WHERE (lease_until IS NULL OR lease_until < now())
         AND EXISTS (SELECT 1 FROM evidence_queue q WHERE q.partner_id = c.partner_id)
       ORDER BY judged_at NULLS FIRST, partner_id LIMIT $1 FOR UPDATE SKIP LOCKED`,
      [partners],
    );
    if (cursors.length === 0) return [];
    await tx.query(
      `UPDATE evidence_cursors SET lease_token = $2, lease_until = now() + make_interval(secs => $3)
       WHERE partner_id = ANY($1)`,
      [cursors.map((cursor) => cursor.partner_id), lease, leaseMs / 1000],
    );
    // One statement for every claimed partner, each partner's exchanges as one text (a JSON array of the
    // queue's arrays): decoding 12 columns a row was most of a claim's time on the embedded store.
    const queued = await tx.query<{ partner_id: string; exchanges: string | null }>(
      `SELECT c.partner_id, (SELECT string_agg(q.exchange, ',' ORDER BY q.at, q.exchange_id) FROM (SELECT exchange, at,
         exchange_id FROM evidence_queue WHERE partner_id = c.partner_id ORDER BY at, exchange_id LIMIT $2) q) AS exchanges
       FROM unnest($1::text[]) AS c(partner_id)`,
      [cursors.map((cursor) => cursor.partner_id), perPartner],
    );
    const texts = new Map(queued.map((row) => [row.partner_id, row.exchanges]));
    return cursors.map((cursor) => ({
      partnerId: cursor.partner_id,
      state: parsed(cursor.state),
      queued: (JSON.parse(`[${texts.get(cursor.partner_id) ?? ''}]`) as unknown[][]).map((row) =>
        exchangeFromQueue(cursor.partner_id, row),
      ),
    }));
  });
  return claimed.map(({ partnerId, state, queued }) => {
    const ids = queued.map((item) => item.id);
    let settled = false;
    const settle = () => {
      if (settled)
        throw new UsageError(`the claim on ${partnerId}'s evidence was already committed or released`);
      settled = true;
    };
    /** Settles the claim with `next` as the judge's state: its JSON, once checked. */
    const settleWith = (next: unknown): string => {
      settle();
      const json = JSON.stringify(next ?? null);
      if (Buffer.byteLength(json) > maxJudgeStateBytes)
        throw new UsageError(
          `the judge's state of ${partnerId} is ${Buffer.byteLength(json)} bytes of JSON, more than ${maxJudgeStateBytes}: keep less`,
        );
      return json;
    };
    const commitWith = async (tx: Queryable, json: string, write?: (tx: Queryable) => Promise<void>) => {
      // One statement (a round trip counts: on the embedded store each one crosses to the database's thread).
      const [result] = await tx.query<{ held: number }>(
        `WITH held AS (
           UPDATE evidence_cursors SET state = $2::jsonb, lease_token = NULL, lease_until = NULL, judged_at = now(),
             judged = judged + $4 WHERE partner_id = $1 AND lease_token = $3 RETURNING partner_id),
         gone AS (DELETE FROM evidence_queue WHERE exchange_id = ANY($5::bigint[]) AND EXISTS (SELECT 1 FROM held))
         SELECT count(*)::int AS held FROM held`,
        [partnerId, json, lease, ids.length, ids],
      );
      if (Number(result?.held ?? 0) === 0) throw new EvidenceLeaseLost(partnerId);
      judgedSince.set(db, (judgedSince.get(db) ?? 0) + ids.length);
      await write?.(tx);
    };
    return {
      partnerId,
      state,
      exchanges: queued.map((item) => item.exchange),
      backlog: queued.length >= perPartner,
      async commit(next, write) {
        const json = settleWith(next);
        await db.transaction((tx) => commitWith(tx, json, write));
      },
      async commitIn(tx, next, write) {
        await commitWith(tx, settleWith(next), write);
      },
      async release() {
        settle();
        await db.query(
          'UPDATE evidence_cursors SET lease_token = NULL, lease_until = NULL WHERE partner_id = $1 AND lease_token = $2',
          [partnerId, lease],
        );
      },
    };
  });
}

/**
 * Exchanges judged on each embedded database since its queue was last vacuumed. PGlite runs PostgreSQL
 * in single-user mode, with no autovacuum: judged queue rows stayed in the queue's table and indexes for
 * good, every claim stepped over all of a partner's judged rows before its waiting ones (a claim's first
 * statement took 121 ms after a minute at 4,000 exchanges/s), and the queue's files grew without end
 * (38 MB after 120,000 exchanges judged, 4.5 MB vacuumed every 20,000).
 */
const judgedSince = new WeakMap<Database, number>();

/** Exchanges judged between two vacuums of the embedded store's queue (12 to 40 ms each). */
export const vacuumEveryJudged = 20_000;

/**
 * Vacuums the embedded store's queue and cursors once `vacuumEveryJudged` exchanges were judged (counted
 * by this process's commits); PostgreSQL's autovacuum does it there.
 */
async function vacuumIfDue(db: Database): Promise<void> {
  if (db.kind !== 'embedded' || (judgedSince.get(db) ?? 0) < vacuumEveryJudged) return;
  judgedSince.set(db, 0);
  await db.query('VACUUM evidence_queue, evidence_cursors');
}

const parsed = (state: unknown): unknown =>
  typeof state === 'string' ? JSON.parse(state) : (state ?? undefined);
