import type { Context } from '@opentelemetry/api';
import type { Database, Queryable } from '../db/database.js';
import type { ExchangeEntry, IssuedEntry, JournalEntry, RevokedEntry } from './journal-file.js';

/**
 * The SQL writers of the recording: journal entries (calls, tokens issued and revoked) into the runs,
 * exchanges and run_tokens tables, used by the statements, the drain of the journal file and replay.
 */

/** Items per statement, and bytes of exchanges per statement (an exchange is at most a few hundred KiB). */
export const maxItems = 256;
export const maxBytes = 4 * 1024 * 1024;
/**
 * A statement refused for its data (SQLSTATE class 22, data exception, or 23, integrity constraint):
 * it may be one item's, so each goes again alone; one partner's call never fails another's.
 */
export const dataError = (error: unknown) => /^2[23]/.test(String((error as { code?: unknown }).code ?? ''));

/**
 * A call to record; `writtenAt` (performance.now()) when it went to the journal file, and the trace
 * context it was written in.
 */
export type StoreItem = JournalEntry & { writtenAt?: number; context?: Context };

/**
 * The items not in the database yet: calls whose run and number are not there (a token issued is
 * stored once whatever, and a revocation written again changes nothing).
 */
export async function notStored(db: Queryable, items: readonly StoreItem[]): Promise<StoreItem[]> {
  const calls = items.filter(isExchange);
  if (calls.length === 0) return [...items];
  const rows = await db.query<{ run_id: string; seq: number }>(
    `SELECT e.run_id, e.seq FROM exchanges e
     JOIN unnest($1::text[], $2::int[]) AS i(run_id, seq) ON e.run_id = i.run_id AND e.seq = i.seq`,
    [calls.map((item) => item.runId), calls.map((item) => item.seq)],
  );
  if (rows.length === 0) return [...items];
  const stored = new Set(rows.map((row) => `${row.run_id}\t${row.seq}`));
  return items.filter((item) => !isExchange(item) || !stored.has(`${item.runId}\t${item.seq}`));
}

export const isExchange = (item: JournalEntry): item is ExchangeEntry => item.kind === undefined;

/** What an entry is, for a log line: a call, a token issued or a revocation. */
export const described = (item: JournalEntry) =>
  item.kind === 'issued'
    ? `token T${item.number}`
    : item.kind === 'revoked'
      ? `the revocation of token T${item.number}`
      : `call ${item.seq}`;

/**
 * Stores journal entries: the calls and the tokens issued in one statement (see `storeExchanges`), each
 * token listed in the session if its run had not reached its cap of calls when it was issued; the
 * revocations, when there are any, after it in the same transaction (a revocation may be of a token
 * the statement stores, which a later part of the same statement could not see). Answers the ids of
 * the runs in the database.
 */
export async function storeEntries(
  db: Database,
  items: readonly StoreItem[],
  openOnly: boolean,
): Promise<Set<string>> {
  const calls = items.filter(isExchange);
  const issued: IssuedBefore[] = [];
  const revoked: RevokedEntry[] = [];
  // The calls of each run written before each token (in this batch: the run's row counts the others).
  const callsBefore = new Map<string, number>();
  for (const item of items)
    if (isExchange(item)) callsBefore.set(item.runId, (callsBefore.get(item.runId) ?? 0) + 1);
    else if (item.kind === 'issued') issued.push({ ...item, before: callsBefore.get(item.runId) ?? 0 });
    else revoked.push(item);
  if (revoked.length === 0) return storeExchanges(db, calls, openOnly, issued);
  return db.transaction(async (tx) => {
    const runs = await storeExchanges(tx, calls, openOnly, issued);
    const rows = await tx.query<{ run_id: string }>(
      `UPDATE run_tokens t SET token = w.token
       FROM unnest($1::text[], $2::int[], $3::jsonb[]) AS w(run_id, number, token)
       WHERE t.run_id = w.run_id AND t.number = w.number
       RETURNING t.run_id`,
      [
        revoked.map((item) => item.runId),
        revoked.map((item) => item.number),
        revoked.map((item) => item.token),
      ],
    );
    for (const row of rows) runs.add(row.run_id);
    return runs;
  });
}

/** A token issued, with the calls of its run written before it in the same batch. */
type IssuedBefore = IssuedEntry & { before: number };

/**
 * Records exchanges, and the tokens `issued` with them, in one statement; answers the ids of the runs
 * in the database. Tokens are listed by the run's row as it was before the statement (its calls in this
 * batch counted by `before`), as if stored first.
 */
export async function storeExchanges(
  db: Queryable,
  items: readonly ExchangeEntry[],
  openOnly: boolean,
  issued: readonly IssuedBefore[] = [],
): Promise<Set<string>> {
  const { counts, ranks } = rankByRun(items);
  // The highest number of each run's items (the run's `seq` never falls behind what it recorded).
  const highest = new Map<string, number>();
  for (const item of items) highest.set(item.runId, Math.max(highest.get(item.runId) ?? 0, item.seq));
  // The latest scenario state given for each run (states only move on: the last is the newest).
  const states = new Map<string, string>();
  for (const item of items) if (item.scenarioState !== undefined) states.set(item.runId, item.scenarioState);
  // The highest token number of each run's tokens (the run's token count never falls behind it).
  const tokens = new Map<string, number>();
  for (const item of issued) tokens.set(item.runId, Math.max(tokens.get(item.runId) ?? 0, item.number));
  const ids = [...new Set([...counts.keys(), ...tokens.keys()])];
  // The tokens' parameters come after the states' (each part of the statement only when it has items).
  const at = states.size === 0 ? 9 : 11;
  // One statement: lock the runs (in id order), keep each run's exchanges up to its cap, count the
  // rest as dropped, store the tokens. With `openOnly`, a run that is not open, or past its deadline
  // (the service may have been down when it passed), records nothing, and is not in the answer.
  const rows = await db.query<{ id: string }>(
    `WITH open AS (
           SELECT id, recorded, max_exchanges FROM runs WHERE id = ANY($1) ${openOnly ? "AND status = 'open' AND expires_at > now()" : ''}
           ORDER BY id FOR NO KEY UPDATE),
         counted AS (
           UPDATE runs r SET recorded = o.recorded + least(w.n, greatest(0, o.max_exchanges - o.recorded)),
             dropped = r.dropped + w.n - least(w.n, greatest(0, o.max_exchanges - o.recorded)),
             seq = greatest(r.seq, w.highest),
             last_activity_at = CASE WHEN w.n > 0 THEN now() ELSE r.last_activity_at END,
             token_count = greatest(r.token_count, w.tokens)
           FROM open o JOIN unnest($1::text[], $2::int[], $7::int[], $8::int[]) AS w(id, n, highest, tokens) ON w.id = o.id
           WHERE r.id = o.id),${
             states.size === 0
               ? ''
               : `
         played AS (
           UPDATE run_scenarios s SET state = w.state
           FROM open o JOIN unnest($9::text[], $10::jsonb[]) AS w(id, state) ON w.id = o.id
           WHERE s.run_id = o.id),`
           }
         kept AS (
           INSERT INTO exchanges (run_id, seq, exchange)
           SELECT i.run_id, i.seq, i.exchange
           FROM unnest($3::text[], $4::int[], $5::int[], string_to_array($6::text, chr(10))::jsonb[]) AS i(run_id, seq, rank, exchange)
           JOIN open o ON o.id = i.run_id
           WHERE o.recorded + i.rank <= o.max_exchanges)${
             issued.length === 0
               ? ''
               : `,
         stored AS (
           INSERT INTO run_tokens (run_id, value_sha256, number, listed, token)
           SELECT t.run_id, t.sha, t.number, o.recorded + t.before < o.max_exchanges,
             t.token || jsonb_build_object('ref', 'T' || t.number)
           FROM unnest($${at}::text[], $${at + 1}::text[], $${at + 2}::int[], $${at + 3}::jsonb[], $${at + 4}::int[])
             AS t(run_id, sha, number, token, before)
           JOIN open o ON o.id = t.run_id
           ON CONFLICT (run_id, value_sha256) DO NOTHING)`
           }
       SELECT id FROM open`,
    [
      ids,
      ids.map((id) => counts.get(id) ?? 0),
      items.map((item) => item.runId),
      items.map((item) => item.seq),
      ranks,
      exchangesText(items),
      ids.map((id) => highest.get(id) ?? null),
      ids.map((id) => tokens.get(id) ?? null),
      ...(states.size === 0 ? [] : [[...states.keys()], [...states.values()]]),
      ...(issued.length === 0
        ? []
        : [
            issued.map((item) => item.runId),
            issued.map((item) => item.sha256),
            issued.map((item) => item.number),
            issued.map((item) => item.token),
            issued.map((item) => item.before),
          ]),
    ],
    // One of eight texts (open only or not, with states or not, with tokens or not).
    { prepare: true },
  );
  return new Set(rows.map((row) => row.id));
}

/**
 * The exchanges of a statement as one text, a line each, which PostgreSQL splits (`string_to_array`):
 * it costs the embedded database's thread less than an array parameter, whose every element is quoted
 * and escaped on the way in, then unquoted. An exchange never holds a line break (`record` refuses one;
 * the journal file's lines are split at them).
 */
const exchangesText = (items: readonly ExchangeEntry[]): string =>
  items.map((item) => item.exchange).join('\n');

/**
 * Each item's rank among its run's items in a batch (1, 2, … in arrival order), and each run's count of
 * items (in the order runs first appear).
 */
export function rankByRun(items: readonly { runId: string }[]): {
  counts: Map<string, number>;
  ranks: number[];
} {
  const counts = new Map<string, number>();
  const ranks = items.map((item) => {
    const rank = (counts.get(item.runId) ?? 0) + 1;
    counts.set(item.runId, rank);
    return rank;
  });
  return { counts, ranks };
}
