import type { Database } from '../db/types.js';
import type { Exchange } from './exchange.js';

/** What a batch came to: stored exchanges, rejected and dropped records; `duplicate` when received before. */
export interface BatchCounts {
  accepted: number;
  /** Records not stored, those about unknown partners included. */
  rejected: number;
  /** Of `rejected`, the records about a partner this service does not know. */
  dropped: number;
  duplicate: boolean;
}

/**
 * Stores a batch once per reporter and batch id, in one statement (so one transaction, and one round
 * trip to the embedded store's thread, where a transaction's statements take turns with judging's): the
 * batch's row, each exchange about a known partner with its queue row for judging, and each such
 * partner's cursor row. A retried batch finds the row (its insert waits for the first to commit, on the
 * key), stores nothing and gets the first time's counts. `exchanges` are the records read; `rejected`
 * the records refused before (malformed, token-looking).
 */
export async function storeBatch(
  db: Database,
  batch: { reporterId: string; batchId: string; exchanges: Omit<Exchange, 'reporterId'>[]; rejected: number },
): Promise<BatchCounts> {
  const column = <T>(pick: (exchange: Omit<Exchange, 'reporterId'>) => T) => batch.exchanges.map(pick);
  const [fresh] = await db.query<{ accepted: number; rejected: number; dropped: number }>(
    `WITH x AS (
       SELECT * FROM unnest($1::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::integer[], $8::text[],
         $9::text[], $10::bigint[], $11::integer[], $12::text[]) WITH ORDINALITY AS x(p, a, k, m, pa, s, f, sc, e, r, er, n)),
     known AS (SELECT x.* FROM x WHERE x.p IN (SELECT id FROM partners WHERE id IN (SELECT DISTINCT p FROM x))),
     counts AS (SELECT (SELECT count(*) FROM known)::int AS accepted, (SELECT count(*) FROM x)::int AS records),
     batch AS (
       INSERT INTO evidence_batches (reporter_id, batch_id, accepted, rejected, dropped)
       SELECT $2, $13, accepted, $14::int + records - accepted, records - accepted FROM counts
       ON CONFLICT DO NOTHING RETURNING accepted, rejected, dropped),
     inserted AS (
       INSERT INTO evidence_exchanges (partner_id, reporter_id, at, kind, method, path, status, fingerprint,
         scopes_granted, expires_at, retry_after_seconds, error)
       SELECT p, $2, a, k, m, pa, s, f, sc::jsonb, e, r, er FROM known WHERE EXISTS (SELECT 1 FROM batch) ORDER BY n
       RETURNING id, partner_id, reporter_id, at, kind, method, path, status, fingerprint, scopes_granted,
         expires_at, retry_after_seconds, error),
     queued AS (
       INSERT INTO evidence_queue (exchange_id, partner_id, at, exchange)
       SELECT id, partner_id, at, ${queuedExchange} FROM inserted),
     -- In one order on every instance, so that two batches never wait on each other's new rows.
     cursors AS (
       INSERT INTO evidence_cursors (partner_id)
       SELECT DISTINCT p FROM known WHERE EXISTS (SELECT 1 FROM batch) ORDER BY p ON CONFLICT DO NOTHING)
     SELECT accepted, rejected, dropped FROM batch`,
    [
      column((x) => x.partnerId),
      batch.reporterId,
      column((x) => x.at),
      column((x) => x.kind),
      column((x) => x.method),
      column((x) => x.path),
      column((x) => x.status),
      column((x) => x.fingerprint ?? null),
      column((x) => (x.scopesGranted ? JSON.stringify(x.scopesGranted) : null)),
      column((x) => x.expiresAt ?? null),
      column((x) => x.retryAfterSeconds ?? null),
      column((x) => x.error ?? null),
      batch.batchId,
      batch.rejected,
    ],
  );
  if (fresh)
    return {
      accepted: Number(fresh.accepted),
      rejected: Number(fresh.rejected),
      dropped: Number(fresh.dropped),
      duplicate: false,
    };
  const [first] = await db.query<{ accepted: number; rejected: number; dropped: number }>(
    'SELECT accepted, rejected, dropped FROM evidence_batches WHERE reporter_id = $1 AND batch_id = $2',
    [batch.reporterId, batch.batchId],
  );
  return {
    accepted: Number(first?.accepted ?? 0),
    rejected: Number(first?.rejected ?? 0),
    dropped: Number(first?.dropped ?? 0),
    duplicate: true,
  };
}

/**
 * The queue's copy of an exchange, as SQL over an `evidence_exchanges` row: a JSON array in the order
 * `exchangeFromQueue` reads (the queue is read alone when judging: see migration 10).
 */
export const queuedExchange = `json_build_array(id, at, kind, method, path, status, reporter_id, fingerprint, scopes_granted,
  expires_at, retry_after_seconds, error)::text`;

/** A queued exchange (`queuedExchange`'s JSON array, parsed) as its id and Exchange. */
export function exchangeFromQueue(partnerId: string, row: unknown[]): { id: string; exchange: Exchange } {
  const [id, at, kind, method, path, status, reporterId, fingerprint, scopes, expiresAt, retryAfter, error] =
    row;
  const exchange: Exchange = {
    at: Number(at),
    partnerId,
    kind: kind as Exchange['kind'],
    method: String(method),
    path: String(path),
    status: Number(status),
    reporterId: String(reporterId),
  };
  if (fingerprint != null) exchange.fingerprint = String(fingerprint);
  if (scopes != null) exchange.scopesGranted = scopes as string[];
  if (expiresAt != null) exchange.expiresAt = Number(expiresAt);
  if (retryAfter != null) exchange.retryAfterSeconds = Number(retryAfter);
  if (error != null) exchange.error = String(error);
  return { id: String(id), exchange };
}
