import { randomBytes } from 'node:crypto';
import { tokenPath } from './auth-server.js';
import { MockError } from './errors.js';
import { type EvidenceRecord, fingerprint, otlpLogsRequest } from './evidence-record.js';
import { type EvidenceBatch, EvidenceSpool } from './evidence-spool.js';
import type { ServedExchange } from './mock-server.js';
import { readCapped } from './register-document.js';

/**
 * Evidence reporting of the production gate: every exchange it serves a partner (token endpoint and
 * API) goes to the certification service's `POST /evidence` as OTLP/HTTP JSON logs, so that the
 * service can tell whether a certified partner stays certified. Production traffic never waits for
 * it: recording is a push onto a bounded buffer once the answer has gone out; a background sender
 * batches (up to `batchRecords` or every `flushIntervalMs`), sends one batch at a time with its own
 * `Idempotency-Key` (the same on every retry), and retries with backoff, honouring Retry-After on 429
 * and 503. With a spool (evidence-spool.ts) what is not acknowledged survives a restart. What has to
 * be dropped is counted, logged, shown in `evidenceStatus()` and carried by the next batch as the
 * resource attribute `partner_lending.evidence.dropped`.
 */

/** Where and how to report evidence (`startMock({ evidence })`, `partner-mock --evidence …`). */
export interface EvidenceOptions {
  /** The certification service's evidence endpoint, e.g. `https://certify.example/evidence`. */
  url: string;
  /** The evidence reporter key (`admin add-evidence-reporter`), sent as `Authorization: Bearer`. */
  key: string;
  /**
   * The key of the tokens' fingerprints (HMAC-SHA-256), one word of at least 32 characters. Default: 32
   * random bytes per start, so a token issued before a restart and presented after it has another
   * fingerprint; give one to keep fingerprints comparable across restarts and gates.
   */
  fingerprintKey?: string;
  /** A file keeping what was not acknowledged across restarts. Default: none, in memory only. */
  spoolFile?: string;
  /** Largest spool file, in bytes. Default 67108864 (64 MiB). */
  spoolMaxBytes?: number;
  /** Exchanges held (not yet acknowledged) at most; past it new ones are dropped and counted. Default 10000. */
  bufferRecords?: number;
  /** Exchanges per batch at most. Default 1000. */
  batchRecords?: number;
  /** A batch is formed at least this often while exchanges wait, in ms. Default 1000. */
  flushIntervalMs?: number;
  /** Longest wait for the service's answer to one batch, in ms. Default 10000. */
  timeoutMs?: number;
  /** First pause after a failed send, doubling up to `retryMaxMs` (±20 %), in ms. Default 1000. */
  retryBaseMs?: number;
  /** Longest pause between sends of a batch (and the most a Retry-After is honoured), in ms. Default 60000. */
  retryMaxMs?: number;
  /** At close, how long the sender may go on sending what is held, in ms. Default 5000. */
  closeGraceMs?: number;
  /** Where the reporter's log lines go. Default: stderr, prefixed `partner-mock: evidence: `. */
  onLog?: (line: string) => void;
}

/** What `RunningMock.evidenceStatus()` reports. */
export interface EvidenceStatus {
  readonly url: string;
  /** `idle`: nothing to send or the last send succeeded; `sending`: a batch in flight; `retrying`: the last send failed. */
  readonly state: 'idle' | 'sending' | 'retrying';
  /** Exchanges recorded and not yet in a batch, and in batches not yet acknowledged. */
  readonly buffered: number;
  readonly pending: number;
  /** Exchanges and batches the service acknowledged. */
  readonly sent: { readonly records: number; readonly batches: number };
  /**
   * Exchanges lost: the buffer was full, the spool was full (or could not be written), or the service
   * refused them for good (a 4xx other than 401, 403, 408, 409, 429, or rejected records in a 2xx).
   */
  readonly dropped: {
    readonly bufferFull: number;
    readonly spoolFull: number;
    readonly refused: number;
    readonly total: number;
  };
  readonly lastError?: string;
  /** The spool file and its size; absent: in memory only. */
  readonly spool?: { readonly file: string; readonly bytes: number };
  /** `given` (`fingerprintKey`, `--evidence-fingerprint-key-file`) or `generated` at start. */
  readonly fingerprintKey: 'given' | 'generated';
}

type Resolved = Required<Omit<EvidenceOptions, 'spoolFile' | 'fingerprintKey'>> & {
  spoolFile?: string;
  fingerprintKey?: string;
};

const fail = (message: string): never => {
  throw new MockError('ERR_MOCK_OPTIONS', message);
};

function integer(name: string, value: number | undefined, fallback: number, min: number, max: number) {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < min || value > max)
    fail(`startMock: evidence.${name} must be an integer from ${min} to ${max}, got ${String(value)}.`);
  return value;
}

const word = (value: unknown, min: number) =>
  typeof value === 'string' && value.trim().length >= min && !/[\s\0]/.test(value.trim());

/** Checks `evidence` options; the defaults filled in. */
export function resolveEvidenceOptions(options: EvidenceOptions): Resolved {
  if (typeof options !== 'object' || options === null)
    fail(
      'startMock: evidence must be { url, key } (the certification service evidence endpoint and a reporter key).',
    );
  let url: URL | undefined;
  try {
    url = typeof options.url === 'string' ? new URL(options.url) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || !/^https?:$/.test(url.protocol) || url.username !== '' || url.password !== '')
    fail(
      'startMock: evidence.url must be an http(s) URL without credentials, such as https://certify.example/evidence.',
    );
  if (!word(options.key, 1))
    fail(
      'startMock: evidence.key must be the evidence reporter key (one word, from `partner-certification-service admin add-evidence-reporter`).',
    );
  if (options.fingerprintKey !== undefined && !word(options.fingerprintKey, 32))
    fail(
      'startMock: evidence.fingerprintKey must be one word of at least 32 characters (e.g. from `openssl rand -base64 32`).',
    );
  const { spoolFile, onLog = (line: string) => process.stderr.write(`partner-mock: evidence: ${line}\n`) } =
    options;
  if (spoolFile !== undefined && (typeof spoolFile !== 'string' || spoolFile.trim() === ''))
    fail('startMock: evidence.spoolFile must be the path of the evidence spool file.');
  if (typeof onLog !== 'function') fail('startMock: evidence.onLog must be a function.');
  const bufferRecords = integer('bufferRecords', options.bufferRecords, 10_000, 1, 10_000_000);
  return {
    url: url!.href,
    key: options.key.trim(),
    ...(options.fingerprintKey === undefined ? {} : { fingerprintKey: options.fingerprintKey.trim() }),
    ...(spoolFile === undefined ? {} : { spoolFile }),
    spoolMaxBytes: integer('spoolMaxBytes', options.spoolMaxBytes, 64 * 1024 * 1024, 4096, 2 ** 40),
    bufferRecords,
    batchRecords: Math.min(bufferRecords, integer('batchRecords', options.batchRecords, 1000, 1, 100_000)),
    flushIntervalMs: integer('flushIntervalMs', options.flushIntervalMs, 1000, 10, 3_600_000),
    timeoutMs: integer('timeoutMs', options.timeoutMs, 10_000, 1, 600_000),
    retryBaseMs: integer('retryBaseMs', options.retryBaseMs, 1000, 1, 3_600_000),
    retryMaxMs: integer('retryMaxMs', options.retryMaxMs, 60_000, 1, 3_600_000),
    closeGraceMs: integer('closeGraceMs', options.closeGraceMs, 5000, 0, 600_000),
    onLog,
  };
}

// Sizes of what one record may carry, so that the buffer's bound is one of bytes too (about 1.5 KB).
const cap = (value: string, max: number) => (value.length > max ? value.slice(0, max) : value);

/** Seconds of a Retry-After value (delay-seconds or an HTTP-date); undefined when neither. */
function retryAfterSeconds(value: string | null | undefined, now: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d{1,9}$/.test(trimmed)) return Number(trimmed);
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}

type Outcome =
  | { kind: 'accepted'; rejected: number; note?: string }
  | { kind: 'refused'; reason: string }
  | { kind: 'retry'; reason: string; afterMs?: number; slow?: boolean }
  | { kind: 'stopped' };

/** How often a line about drops may be logged, at most. */
const dropLogIntervalMs = 10_000;

export class EvidenceReporter {
  readonly #options: Resolved;
  readonly #fingerprintKey: Buffer;
  readonly #spool: EvidenceSpool | undefined;
  readonly #stop = new AbortController();
  readonly #timer: NodeJS.Timeout;
  #buffer: EvidenceRecord[] = [];
  readonly #pending: EvidenceBatch[] = [];
  #pendingRecords = 0;
  /** Records taken from the buffer and being written to the spool. */
  #forming = 0;
  #formChain: Promise<void> = Promise.resolve();
  #formScheduled = false;
  /** Drops not yet reported by a batch. */
  #unreported = 0;
  #droppedBuffer = 0;
  #droppedSpool = 0;
  #refused = 0;
  #loggedDrops = 0;
  #lastDropLogAt = Number.NEGATIVE_INFINITY;
  #sentRecords = 0;
  #sentBatches = 0;
  #state: EvidenceStatus['state'] = 'idle';
  #lastError: string | undefined;
  #wake: (() => void) | undefined;
  #stopping = false;
  #loop: Promise<void>;
  #closing: Promise<void> | undefined;

  private constructor(options: Resolved, spool: EvidenceSpool | undefined, carried: EvidenceBatch[]) {
    this.#options = options;
    this.#fingerprintKey =
      options.fingerprintKey === undefined ? randomBytes(32) : Buffer.from(options.fingerprintKey, 'utf8');
    this.#spool = spool;
    for (const batch of carried) {
      this.#pending.push(batch);
      this.#pendingRecords += batch.records.length;
    }
    this.#timer = setInterval(() => void this.#form(), options.flushIntervalMs);
    this.#timer.unref();
    this.#loop = this.#run();
  }

  /** Starts reporting: opens the spool (sending first what it holds) and the background sender. */
  static async start(options: EvidenceOptions): Promise<EvidenceReporter> {
    const resolved = resolveEvidenceOptions(options);
    if (resolved.spoolFile === undefined) return new EvidenceReporter(resolved, undefined, []);
    const { spool, batches, damaged } = await EvidenceSpool.open(resolved.spoolFile, resolved.spoolMaxBytes);
    if (damaged > 0)
      resolved.onLog(
        `the spool ${spool.file} held ${damaged} damaged line(s), skipped (a gate stopped while writing leaves one)`,
      );
    if (batches.length > 0)
      resolved.onLog(
        `sending first the ${batches.reduce((sum, b) => sum + b.records.length, 0)} exchange(s) in ${batches.length} batch(es) the spool ${spool.file} kept from before`,
      );
    return new EvidenceReporter(resolved, spool, batches);
  }

  /**
   * Records an exchange the gate answered: the token endpoint's and the API's, once a partner is
   * known (an authenticated client, or a token whose signature verified). Synchronous and O(1): the
   * answer has already gone out, and nothing here waits for the service.
   */
  record(served: ServedExchange): void {
    if (this.#stopping) return;
    const { exchange } = served;
    const tokenEndpoint = served.server === 'auth' && served.path === tokenPath;
    if (!tokenEndpoint && served.server !== 'api') return;
    const partnerId = exchange.partnerId ?? exchange.tokenPartnerId;
    if (partnerId === undefined) return;
    if (this.#buffer.length + this.#forming + this.#pendingRecords >= this.#options.bufferRecords) {
      this.#droppedBuffer += 1;
      this.#unreported += 1;
      return;
    }
    const token = tokenEndpoint ? exchange.issued?.token : exchange.presented;
    this.#buffer.push({
      at: served.at,
      partnerId: cap(partnerId, 200),
      method: cap(served.method, 32),
      path: cap(served.path, 1024),
      status: served.status,
      ...(token !== undefined && { fingerprint: fingerprint(this.#fingerprintKey, token) }),
      ...(tokenEndpoint && { grantType: cap(exchange.grantType ?? '', 64) }),
      ...(tokenEndpoint &&
        exchange.issued !== undefined && {
          scopeGranted: cap(exchange.issued.scope, 1024),
          expiresIn: exchange.issued.expiresIn,
        }),
      ...(served.retryAfter !== undefined && { retryAfter: cap(served.retryAfter, 64) }),
      ...(exchange.error !== undefined && { error: cap(exchange.error, 64) }),
    });
    if (this.#buffer.length >= this.#options.batchRecords && !this.#formScheduled) {
      this.#formScheduled = true;
      setImmediate(() => void this.#form());
    }
  }

  status(): EvidenceStatus {
    return {
      url: this.#options.url,
      state: this.#state,
      buffered: this.#buffer.length + this.#forming,
      pending: this.#pendingRecords,
      sent: { records: this.#sentRecords, batches: this.#sentBatches },
      dropped: {
        bufferFull: this.#droppedBuffer,
        spoolFull: this.#droppedSpool,
        refused: this.#refused,
        total: this.#dropped(),
      },
      ...(this.#lastError === undefined ? {} : { lastError: this.#lastError }),
      ...(this.#spool === undefined ? {} : { spool: { file: this.#spool.file, bytes: this.#spool.bytes } }),
      fingerprintKey: this.#options.fingerprintKey === undefined ? 'generated' : 'given',
    };
  }

  #dropped(): number {
    return this.#droppedBuffer + this.#droppedSpool + this.#refused;
  }

  /** Moves what the buffer holds into batches (each written to the spool first, when there is one). */
  #form(): Promise<void> {
    this.#formScheduled = false;
    this.#formChain = this.#formChain.then(() => this.#formNow());
    return this.#formChain;
  }

  async #formNow(): Promise<void> {
    while (this.#buffer.length > 0) {
      const records = this.#buffer.splice(0, this.#options.batchRecords);
      const batch: EvidenceBatch = {
        id: randomBytes(16).toString('base64url'),
        dropped: this.#unreported,
        records,
      };
      this.#unreported = 0;
      this.#forming += records.length;
      let kept = true;
      if (this.#spool !== undefined) {
        try {
          kept = await this.#spool.append(batch);
          if (!kept)
            this.#lastError = `the spool ${this.#spool.file} is full (${this.#options.spoolMaxBytes} bytes)`;
        } catch (error) {
          kept = false;
          this.#lastError = `the spool ${this.#spool.file} could not be written (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`;
        }
      }
      this.#forming -= records.length;
      if (!kept) {
        this.#droppedSpool += records.length;
        this.#unreported += batch.dropped + records.length;
        continue;
      }
      this.#pending.push(batch);
      this.#pendingRecords += records.length;
      this.#wake?.();
    }
    this.#logDrops(false);
  }

  /** One line when exchanges were dropped since the last one, at most every 10 s (and at close). */
  #logDrops(force: boolean): void {
    const total = this.#dropped();
    if (total === this.#loggedDrops) return;
    const now = Date.now();
    if (!force && now - this.#lastDropLogAt < dropLogIntervalMs) return;
    this.#options.onLog(
      `${total - this.#loggedDrops} exchange(s) dropped since the last report (${total} since start: buffer full ${this.#droppedBuffer}, spool full ${this.#droppedSpool}, refused by the service ${this.#refused})${this.#lastError === undefined ? '' : `; last error: ${this.#lastError}`}`,
    );
    this.#loggedDrops = total;
    this.#lastDropLogAt = now;
  }

  async #run(): Promise<void> {
    let failures = 0;
    for (;;) {
      if (this.#stop.signal.aborted) return;
      const batch = this.#pending[0];
      if (batch === undefined) {
        if (this.#stopping) return;
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
        this.#wake = undefined;
        continue;
      }
      this.#state = 'sending';
      const outcome = await this.#send(batch);
      if (outcome.kind === 'stopped') return;
      if (outcome.kind === 'retry') {
        failures += 1;
        if (failures === 1 || this.#lastError !== outcome.reason)
          this.#options.onLog(`${outcome.reason}; the batch is sent again later (nothing is lost meanwhile)`);
        this.#state = 'retrying';
        this.#lastError = outcome.reason;
        await this.#pause(this.#delay(failures, outcome));
        continue;
      }
      if (failures > 0)
        this.#options.onLog(`the service takes evidence again (after ${failures} failed send(s))`);
      failures = 0;
      this.#pending.shift();
      this.#pendingRecords -= batch.records.length;
      if (outcome.kind === 'accepted') {
        this.#sentRecords += batch.records.length - outcome.rejected;
        this.#sentBatches += 1;
        this.#refused += outcome.rejected;
        this.#lastError = outcome.note;
      } else {
        this.#refused += batch.records.length;
        // The service never took them: the next batch says so (it already knows of partialSuccess rejects).
        this.#unreported += batch.records.length;
        this.#lastError = outcome.reason;
        this.#options.onLog(`${outcome.reason}; its ${batch.records.length} exchange(s) are dropped`);
      }
      this.#state = 'idle';
      await this.#spool?.ack(batch.id).catch(() => undefined);
    }
  }

  #delay(failures: number, outcome: Extract<Outcome, { kind: 'retry' }>): number {
    const { retryBaseMs, retryMaxMs } = this.#options;
    if (outcome.afterMs !== undefined) return Math.min(retryMaxMs, outcome.afterMs);
    if (outcome.slow) return retryMaxMs;
    const doubled = Math.min(retryMaxMs, retryBaseMs * 2 ** Math.min(20, failures - 1));
    // Jitter (±20 %) so that a fleet of gates does not come back at the same instant.
    return Math.min(retryMaxMs, doubled * (0.8 + Math.random() * 0.4));
  }

  #pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#stop.signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#stop.signal.addEventListener('abort', done, { once: true });
    });
  }

  async #send(batch: EvidenceBatch): Promise<Outcome> {
    const { url, key, timeoutMs } = this.#options;
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
        signal: AbortSignal.any([this.#stop.signal, AbortSignal.timeout(timeoutMs)]),
      });
    } catch (error) {
      if (this.#stop.signal.aborted) return { kind: 'stopped' };
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

  /**
   * Stops: what the buffer holds is put in a batch (and the spool), the sender goes on for at most
   * `closeGraceMs`, then the send in flight is aborted. With a spool, what is left is sent at the next
   * start; without one it is lost, and a line says how much.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      clearInterval(this.#timer);
      await this.#form();
      this.#stopping = true;
      this.#wake?.();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this.#loop,
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, this.#options.closeGraceMs);
        }),
      ]);
      clearTimeout(timer);
      this.#stop.abort();
      await this.#loop;
      this.#logDrops(true);
      if (this.#pendingRecords > 0)
        this.#options.onLog(
          this.#spool === undefined
            ? `${this.#pendingRecords} exchange(s) were not acknowledged before the gate stopped and are lost (--evidence-spool FILE keeps them for the next start)`
            : `${this.#pendingRecords} exchange(s) not yet acknowledged stay in ${this.#spool.file} and are sent at the next start`,
        );
      await this.#spool?.close();
    })();
    return this.#closing;
  }
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
