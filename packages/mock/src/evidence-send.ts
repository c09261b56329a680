import { otlpLogsRequest } from './evidence-record.js';
import type { EvidenceBatch } from './evidence-spool.js';
import { readCapped } from './read-capped.js';

/**
 * One send of an evidence batch and what follows from the answer (evidence-reporter.ts runs the
 * loop): the `POST` with the batch's own `Idempotency-Key`, the answer sorted into accepted (OTLP's
 * partialSuccess counted), refused for good, or to retry (Retry-After honoured on 429 and 503, a slow
 * retry on 401 and 403), and the pause before the next try: doubling with jitter up to `retryMaxMs`.
 */

/** What one send came to. */
export type Outcome =
  | { kind: 'accepted'; rejected: number; note?: string }
  | { kind: 'refused'; reason: string }
  | { kind: 'retry'; reason: string; afterMs?: number; slow?: boolean }
  | { kind: 'stopped' };

/** Where to send and how long to wait for the answer. */
export interface SendTarget {
  readonly url: string;
  readonly key: string;
  readonly timeoutMs: number;
}

/** Seconds of a Retry-After value (delay-seconds or an HTTP-date); undefined when neither. */
export function retryAfterSeconds(value: string | null | undefined, now: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d{1,9}$/.test(trimmed)) return Number(trimmed);
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}

/** The pause before the next send of a batch after `failures` failed sends in a row, in ms. */
export function retryDelay(
  { retryBaseMs, retryMaxMs }: { readonly retryBaseMs: number; readonly retryMaxMs: number },
  failures: number,
  outcome: Extract<Outcome, { kind: 'retry' }>,
): number {
  if (outcome.afterMs !== undefined) return Math.min(retryMaxMs, outcome.afterMs);
  if (outcome.slow) return retryMaxMs;
  const doubled = Math.min(retryMaxMs, retryBaseMs * 2 ** Math.min(20, failures - 1));
  // Jitter (±20 %) so that a fleet of gates does not come back at the same instant.
  return Math.min(retryMaxMs, doubled * (0.8 + Math.random() * 0.4));
}

/** Waits `ms`, or less when `stop` aborts. */
export function pause(ms: number, stop: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      stop.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    stop.addEventListener('abort', done, { once: true });
  });
}

/** Sends one batch to the evidence endpoint; `stop` aborts the send in flight (the outcome: `stopped`). */
export async function sendBatch(
  { url, key, timeoutMs }: SendTarget,
  batch: EvidenceBatch,
  stop: AbortSignal,
): Promise<Outcome> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        accept: 'application/json',
        'idempotency-key': batch.id,
      },
      body: otlpLogsRequest(batch.records, batch.dropped),
      // The reporter key goes to the evidence endpoint only.
      redirect: 'error',
      signal: AbortSignal.any([stop, AbortSignal.timeout(timeoutMs)]),
    });
  } catch (error) {
    if (stop.aborted) return { kind: 'stopped' };
    if ((error as Error).name === 'TimeoutError')
      return { kind: 'retry', reason: `the evidence endpoint did not answer within ${timeoutMs} ms` };
    const code = (error as { cause?: { code?: string } }).cause?.code;
    return {
      kind: 'retry',
      reason: `the evidence endpoint could not be reached${code ? ` (${code})` : ''}`,
    };
  }
  const { status } = response;
  let body: string | undefined;
  try {
    body = await readCapped(response, 64 * 1024);
  } catch {
    body = undefined;
  }
  if (status >= 200 && status < 300) return accepted(body);
  const answered = `the evidence endpoint answered ${status} to POST ${url}`;
  if (status === 429 || status === 503) {
    const seconds = retryAfterSeconds(response.headers.get('retry-after'), Date.now());
    return { kind: 'retry', reason: answered, ...(seconds !== undefined && { afterMs: seconds * 1000 }) };
  }
  if (status === 401 || status === 403)
    return {
      kind: 'retry',
      slow: true,
      reason: `${answered} (is the evidence reporter key right? --evidence-key-file, from partner-certification-service admin add-evidence-reporter)`,
    };
  if (status >= 500 || status === 408 || status === 409 || status === 425)
    return { kind: 'retry', reason: answered };
  return { kind: 'refused', reason: `${answered}: the batch is refused${titleOf(body)}` };
}

/** A 2xx: OTLP's partialSuccess may say some records were rejected. */
function accepted(body: string | undefined): Outcome {
  try {
    const partial = (
      JSON.parse(body ?? '') as { partialSuccess?: { rejectedLogRecords?: unknown; errorMessage?: unknown } }
    )?.partialSuccess;
    const rejected = Number(partial?.rejectedLogRecords ?? 0);
    if (Number.isSafeInteger(rejected) && rejected > 0)
      return {
        kind: 'accepted',
        rejected,
        note: `the evidence endpoint rejected ${rejected} record(s) of a batch${typeof partial?.errorMessage === 'string' ? `: ${partial.errorMessage.slice(0, 200)}` : ''}`,
      };
  } catch {
    // not JSON: a plain acknowledgement
  }
  return { kind: 'accepted', rejected: 0 };
}

/** The `title` (RFC 9457) or `error` of a refusal, shortened, when the body has one. */
function titleOf(body: string | undefined): string {
  try {
    const value = JSON.parse(body ?? '') as { title?: unknown; detail?: unknown; error?: unknown };
    const title = [value.title, value.detail, value.error].find((item) => typeof item === 'string');
    return typeof title === 'string' ? ` (${title.slice(0, 200).replace(/[^\x20-\x7e]/g, '?')})` : '';
  } catch {
    return '';
  }
}
