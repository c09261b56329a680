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
 * Stores a batch once per reporter and batch id, in one transaction: the batch's row (a retried batch
 * finds it, stores nothing and gets the first time's counts), each exchange about a known partner with
 * its queue row for judging, and each such partner's cursor row. `exchanges` are the records read;
 * `rejected` the records refused before (malformed, token-looking).
 */
export async function storeBatch(
  db: Database,
  batch: { reporterId: string; batchId: string; exchanges: Omit<Exchange, 'reporterId'>[]; rejected: number },
): Promise<BatchCounts> {
  const partners = [...new Set(batch.exchanges.map((exchange) => exchange.partnerId))].sort();
  return db.transaction(async (tx) => {
    const known = new Set(
      partners.length === 0
        ? []
        : (await tx.query<{ id: string }>('SELECT id FROM partners WHERE id = ANY($1)', [partners])).map(
            (row) => row.id,
          ),
    );
    const kept = batch.exchanges.filter((exchange) => known.has(exchange.partnerId));
    const dropped = batch.exchanges.length - kept.length;
    const counts = { accepted: kept.length, rejected: batch.rejected + dropped, dropped };
    // A retried batch waits here for the first to commit (the primary key), then finds its row.
    const [fresh] = await tx.query(
      `INSERT INTO evidence_batches (reporter_id, batch_id, accepted, rejected, dropped) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT DO NOTHING RETURNING batch_id`,
      [batch.reporterId, batch.batchId, counts.accepted, counts.rejected, counts.dropped],
    );
    if (!fresh) {
      const [first] = await tx.query<{ accepted: number; rejected: number; dropped: number }>(
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
    if (kept.length > 0) {
      const column = <T>(pick: (exchange: Omit<Exchange, 'reporterId'>) => T) => kept.map(pick);
      await tx.query(
        `WITH inserted AS (
           INSERT INTO evidence_exchanges (partner_id, reporter_id, at, kind, method, path, status, fingerprint,
             scopes_granted, expires_at, retry_after_seconds, error)
           SELECT p, $2, a, k, m, pa, s, f, sc::jsonb, e, r, er
           FROM unnest($1::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::integer[], $8::text[],
             $9::text[], $10::bigint[], $11::integer[], $12::text[]) AS x(p, a, k, m, pa, s, f, sc, e, r, er)
           RETURNING id, partner_id, at)
         INSERT INTO evidence_queue (exchange_id, partner_id, at) SELECT id, partner_id, at FROM inserted`,
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
        ],
      );
      // In one order on every instance, so that two batches never wait on each other's new rows.
      await tx.query(
        'INSERT INTO evidence_cursors (partner_id) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING',
        [[...new Set(kept.map((exchange) => exchange.partnerId))].sort()],
      );
    }
    return { ...counts, duplicate: false };
  });
}

/** An `evidence_exchanges` row as an Exchange. */
export function exchangeFromRow(row: Record<string, unknown>): Exchange {
  const exchange: Exchange = {
    at: Number(row.at),
    partnerId: String(row.partner_id),
    kind: row.kind as Exchange['kind'],
    method: String(row.method),
    path: String(row.path),
    status: Number(row.status),
    reporterId: String(row.reporter_id),
  };
  if (row.fingerprint != null) exchange.fingerprint = String(row.fingerprint);
  if (row.scopes_granted != null)
    exchange.scopesGranted =
      typeof row.scopes_granted === 'string'
        ? JSON.parse(row.scopes_granted)
        : (row.scopes_granted as string[]);
  if (row.expires_at != null) exchange.expiresAt = Number(row.expires_at);
  if (row.retry_after_seconds != null) exchange.retryAfterSeconds = Number(row.retry_after_seconds);
  if (row.error != null) exchange.error = String(row.error);
  return exchange;
}
