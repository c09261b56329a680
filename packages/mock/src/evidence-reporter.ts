import { randomBytes } from 'node:crypto';
import { tokenPath } from './auth-server.js';
import {
  type EvidenceOptions,
  type EvidenceStatus,
  type ResolvedEvidenceOptions,
  resolveEvidenceOptions,
} from './evidence-options.js';
import { type EvidenceRecord, fingerprint } from './evidence-record.js';
import { pause, retryDelay, sendBatch } from './evidence-send.js';
import { type EvidenceBatch, EvidenceSpool } from './evidence-spool.js';
import type { ServedExchange } from './mock-server.js';

export { type EvidenceOptions, type EvidenceStatus, resolveEvidenceOptions } from './evidence-options.js';

/**
 * Evidence reporting of the production gate: every exchange it serves a partner (token endpoint and
 * API) goes to the certification service's `POST /evidence` as OTLP/HTTP JSON logs, so that the
 * service can tell whether a certified partner stays certified. Production traffic never waits for
 * it: recording is a push onto a bounded buffer once the answer has gone out; a background sender
 * batches (up to `batchRecords` or every `flushIntervalMs`), sends one batch at a time with its own
 * `Idempotency-Key` (the same on every retry), and retries with backoff, honouring Retry-After on 429
 * and 503. With a spool (evidence-spool.ts) what is not acknowledged survives a restart. What has to
 * be dropped is counted, logged, shown in `evidenceStatus()` and carried by the next batch as the
 * resource attribute `partner_lending.evidence.dropped`. Its options are checked in evidence-options.ts;
 * one send and its retry policy are evidence-send.ts.
 */

// Sizes of what one record may carry, so that the buffer's bound is one of bytes too (about 1.5 KB).
const cap = (value: string, max: number) => (value.length > max ? value.slice(0, max) : value);

/** How often a line about drops may be logged, at most. */
const dropLogIntervalMs = 10_000;

export class EvidenceReporter {
  readonly #options: ResolvedEvidenceOptions;
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

  private constructor(
    options: ResolvedEvidenceOptions,
    spool: EvidenceSpool | undefined,
    carried: EvidenceBatch[],
  ) {
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
      const outcome = await sendBatch(this.#options, batch, this.#stop.signal);
      if (outcome.kind === 'stopped') return;
      if (outcome.kind === 'retry') {
        failures += 1;
        if (failures === 1 || this.#lastError !== outcome.reason)
          this.#options.onLog(`${outcome.reason}; the batch is sent again later (nothing is lost meanwhile)`);
        this.#state = 'retrying';
        this.#lastError = outcome.reason;
        await pause(retryDelay(this.#options, failures, outcome), this.#stop.signal);
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
