import { createHash } from 'node:crypto';
import { readStreamCapped } from '@partner-lending/mock';
import type { Context, Hono } from 'hono';
import type { Database } from '../db/types.js';
import { unavailableRetrySeconds } from '../errors.js';
import type { LogLine } from '../observability/logger.js';
import { problem } from '../web/problem.js';
import type { Exchange } from './exchange.js';
import { evidenceMetrics, type RejectionReason } from './metrics.js';
import {
  decodeLogs,
  encodingOf,
  exportResponse,
  inflate,
  type OtlpEncoding,
  type OtlpLogRecord,
  OtlpRequestError,
} from './otlp.js';
import { exchangeOf } from './records.js';
import { evidenceReporterOf } from './reporters.js';
import { type BatchCounts, storeBatch } from './store.js';

/** Bounds of `POST /evidence` (the `evidence` options of `startService`). */
export interface EvidenceLimits {
  /** A request body's largest size, as sent and once inflated, in bytes. Default 4 MiB. */
  maxBodyBytes: number;
  /** Log records one request may carry. Default 10 000. */
  maxRecords: number;
  /** Batches this instance reads and stores at once; past it, 429 with Retry-After. Default 8. */
  maxInFlight: number;
}

export const defaultEvidenceLimits: EvidenceLimits = {
  maxBodyBytes: 4 * 1024 * 1024,
  maxRecords: 10_000,
  maxInFlight: 8,
};

const challenge = 'Bearer realm="partner-evidence"';
const idempotencyKey = /^[\x21-\x7e]{1,200}$/;

type Refuse = (
  c: Context,
  status: 400 | 401 | 413 | 415 | 429 | 503,
  title: string,
  detail: string,
  headers?: Record<string, string>,
) => Response;

const refuse: Refuse = (c, status, title, detail, headers = {}) => {
  evidenceMetrics.refused.inc({ code: String(status) });
  return problem(c, status, title, detail, {}, headers);
};

const unavailable = (c: Context) =>
  refuse(
    c,
    503,
    'Evidence unavailable',
    `the certification service cannot store evidence just now; send the batch again in ${unavailableRetrySeconds} s`,
    { 'retry-after': String(unavailableRetrySeconds) },
  );

/** What a request must show before its body is read: a reporter's key, a type and encoding read, a size within bounds. */
async function admit(
  c: Context,
  deps: { db: Database; limits: EvidenceLimits; log: LogLine },
): Promise<Response | { reporterId: string; encoding: OtlpEncoding; gzip: boolean }> {
  const bearer = /^bearer +(\S{1,512})$/i.exec(c.req.header('authorization') ?? '');
  if (!bearer)
    return refuse(
      c,
      401,
      'Evidence reporter key required',
      'send an evidence reporter key as "Authorization: Bearer <key>" (the operator makes one with "partner-certification-service admin add-evidence-reporter")',
      { 'www-authenticate': challenge },
    );
  let reporter: { id: string } | undefined;
  try {
    reporter = await evidenceReporterOf(deps.db, bearer[1]!);
  } catch (error) {
    deps.log(`evidence: reporter key check failed: ${(error as Error).message}`);
    return unavailable(c);
  }
  if (!reporter)
    return refuse(
      c,
      401,
      'Unknown evidence reporter key',
      'this key is not an evidence reporter key of this service (a partner API key or a register key is not one)',
      { 'www-authenticate': `${challenge}, error="invalid_token"` },
    );
  const encoding = encodingOf(c.req.header('content-type'));
  if (!encoding)
    return refuse(
      c,
      415,
      'Unsupported content type',
      'send OTLP logs as application/json or application/x-protobuf',
    );
  const contentEncoding = (c.req.header('content-encoding') ?? 'identity').trim().toLowerCase();
  if (contentEncoding !== 'identity' && contentEncoding !== 'gzip')
    return refuse(
      c,
      415,
      'Unsupported content encoding',
      'send the body as is or gzip-compressed (Content-Encoding: gzip)',
    );
  if (Number(c.req.header('content-length') ?? 0) > deps.limits.maxBodyBytes) return tooLarge(c, deps.limits);
  return { reporterId: reporter.id, encoding, gzip: contentEncoding === 'gzip' };
}

const tooLarge = (c: Context, limits: EvidenceLimits) =>
  refuse(
    c,
    413,
    'Batch too large',
    `a batch of evidence is at most ${limits.maxBodyBytes} bytes: send smaller batches`,
  );

/** The body read to its bound, its batch id and its records; or the refusal. */
async function readBatch(
  c: Context,
  admitted: { encoding: OtlpEncoding; gzip: boolean },
  limits: EvidenceLimits,
): Promise<Response | { batchId: string; records: OtlpLogRecord[] }> {
  let body = await readStreamCapped(c.req.raw.body, limits.maxBodyBytes);
  if (!body) return tooLarge(c, limits);
  const header = c.req.header('idempotency-key');
  if (header !== undefined && !idempotencyKey.test(header))
    return refuse(
      c,
      400,
      'Bad Idempotency-Key',
      'Idempotency-Key takes 1 to 200 printable ASCII characters, no spaces',
    );
  try {
    if (admitted.gzip) body = inflate(body, limits.maxBodyBytes);
    const records = decodeLogs(body, admitted.encoding, limits.maxRecords);
    return { batchId: header ?? `sha256:${createHash('sha256').update(body).digest('hex')}`, records };
  } catch (error) {
    if (!(error instanceof OtlpRequestError)) throw error;
    return error.tooLarge
      ? refuse(c, 413, 'Batch too large', error.message)
      : refuse(c, 400, 'Not OTLP logs', error.message);
  }
}

/** The records read: the exchanges to store, and the others counted by what was wrong. */
function tally(records: readonly OtlpLogRecord[]) {
  const exchanges: Omit<Exchange, 'reporterId'>[] = [];
  const reasons = new Map<string, { reason: RejectionReason; count: number }>();
  for (const record of records) {
    const outcome = exchangeOf(record);
    if ('exchange' in outcome) exchanges.push(outcome.exchange);
    else {
      const seen = reasons.get(outcome.detail) ?? { reason: outcome.rejected, count: 0 };
      seen.count += 1;
      reasons.set(outcome.detail, seen);
    }
  }
  return { exchanges, reasons };
}

const unknownPartner = 'a record names a partner (partner.id) this service does not know: dropped';

/** The answer to a batch stored (or received before), in its encoding; the counters counted. */
function answer(
  encoding: OtlpEncoding,
  batchId: string,
  counts: BatchCounts,
  reasons: Map<string, { reason: RejectionReason; count: number }>,
): Response {
  let message: string;
  if (counts.duplicate) {
    evidenceMetrics.deduplicated.inc();
    message = `this batch (${batchId.slice(0, 80)}) was received before: ${counts.accepted} exchanges stored then, ${counts.rejected} records rejected (${counts.dropped} about partners this service does not know)`;
  } else {
    evidenceMetrics.received.inc(counts.accepted);
    if (counts.dropped > 0) {
      evidenceMetrics.dropped.inc(counts.dropped);
      reasons.set(unknownPartner, { reason: 'unknown_partner', count: counts.dropped });
    }
    for (const { reason, count } of reasons.values()) evidenceMetrics.rejected.inc({ reason }, count);
    message = [...reasons]
      .slice(0, 8)
      .map(([detail, { count }]) => `${count} × ${detail}`)
      .join('; ');
  }
  const response = exportResponse(encoding, counts.rejected, message);
  return new Response(response.body, { status: 200, headers: { 'content-type': response.contentType } });
}

/**
 * `POST /evidence`: OTLP/HTTP logs from an evidence reporter (JSON or protobuf), each log record one
 * exchange served in production. In this order, before anything is decoded: the reporter's key, the
 * content type and encoding, the declared size, this instance's batches in flight; then the body read
 * to its bound, decoded, each record read (records.ts), and the batch stored once (store.ts).
 */
export function mountEvidence(
  // biome-ignore lint/suspicious/noExplicitAny: mounted on the service's one app
  app: Hono<any>,
  deps: { db: Database; limits: EvidenceLimits; log: LogLine },
): void {
  let inFlight = 0;
  app.post('/evidence', async (c) => {
    const admitted = await admit(c, deps);
    if (admitted instanceof Response) return admitted;
    if (inFlight >= deps.limits.maxInFlight)
      return refuse(
        c,
        429,
        'Too many batches at once',
        `this instance is storing ${deps.limits.maxInFlight} batches of evidence already: send this one again in 1 s`,
        { 'retry-after': '1' },
      );
    inFlight += 1;
    try {
      const batch = await readBatch(c, admitted, deps.limits);
      if (batch instanceof Response) return batch;
      const { exchanges, reasons } = tally(batch.records);
      let counts: BatchCounts;
      try {
        counts = await storeBatch(deps.db, {
          reporterId: admitted.reporterId,
          batchId: batch.batchId,
          exchanges,
          rejected: batch.records.length - exchanges.length,
        });
      } catch (error) {
        deps.log(
          `evidence: storing a batch of reporter ${admitted.reporterId} failed: ${(error as Error).message}`,
        );
        return unavailable(c);
      }
      return answer(admitted.encoding, batch.batchId, counts, reasons);
    } finally {
      inFlight -= 1;
    }
  });
}
