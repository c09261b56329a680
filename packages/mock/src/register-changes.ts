import { readCapped } from './read-capped.js';

/**
 * The register's change notice, held by the production gate in the background: `GET <register>/changes
 * ?after=<seq>` with the register reader key, a long poll the certification service answers as soon as
 * what the register says changed (`{ changed: true, seq }`) or after its hold (`{ changed: false }`).
 * On `changed` the gate reads the signed register again at once — the notice carries no entry, so the
 * register's own rules (signature, replay floor, clock skew, exp) decide what is taken. A failed,
 * refused or hanging notice never closes anything by itself: the gate keeps its max-age pull, and the
 * notice is asked again after a growing pause (1 s doubling to 60 s, or the answer's Retry-After; a 404,
 * a service without the notice, every 5 minutes). No production call waits for it.
 */

export interface ChangeWatcherOptions {
  /** The notice's address: `<register url>/changes`. */
  url: string;
  /** The register reader key. */
  key: string;
  /** The seq to send as `after`: the highest the gate knows (its copy's, or the last notice's). */
  seq: () => number | undefined;
  /** Reads the register again (never throws). */
  onChange: () => Promise<void>;
  /** Longest wait for one answer, in ms (the service holds a poll for 25 s). Default 40 000. */
  timeoutMs?: number;
  /** Pause before asking again after the first failure, in ms (doubling, at most `maxBackoffMs`). */
  backoffMs?: number;
  maxBackoffMs?: number;
}

/** What `RegisterStatus.changes` reports. */
export interface ChangeWatcherStatus {
  readonly url: string;
  /** `listening`: a poll answered lately; `retrying`: the last poll failed; `absent`: the service has none (404). */
  readonly state: 'starting' | 'listening' | 'retrying' | 'absent';
  /** How many notices said changed. */
  readonly notices: number;
  readonly lastError?: string;
}

const absentRetryMs = 5 * 60_000;

export class RegisterChangeWatcher {
  readonly #options: Required<ChangeWatcherOptions>;
  readonly #stop = new AbortController();
  #after: number | undefined;
  #state: ChangeWatcherStatus['state'] = 'starting';
  #notices = 0;
  #lastError: string | undefined;
  #loop: Promise<void> | undefined;

  constructor(options: ChangeWatcherOptions) {
    this.#options = { timeoutMs: 40_000, backoffMs: 1000, maxBackoffMs: 60_000, ...options };
  }

  /** Starts holding the notice (once). */
  start(): void {
    this.#loop ??= this.#run();
  }

  /** Stops: the poll in flight is aborted; resolves once the loop has ended. */
  async close(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
  }

  status(): ChangeWatcherStatus {
    return {
      url: this.#options.url,
      state: this.#state,
      notices: this.#notices,
      ...(this.#lastError === undefined ? {} : { lastError: this.#lastError }),
    };
  }

  async #run(): Promise<void> {
    let failures = 0;
    while (!this.#stop.signal.aborted) {
      // At least a second between polls that change nothing: a service answering at once cannot spin it.
      let pauseMs = 0;
      const startedAt = Date.now();
      try {
        const answer = await this.#poll();
        if (answer.kind === 'answer') {
          if (!answer.changed) pauseMs = Math.max(0, 1000 - (Date.now() - startedAt));
          failures = 0;
          this.#state = 'listening';
          this.#lastError = undefined;
          if (answer.changed) {
            this.#notices += 1;
            await this.#options.onChange();
          }
          this.#after = Math.max(answer.seq, this.#after ?? 0, this.#options.seq() ?? 0);
        } else {
          failures += 1;
          this.#state = answer.kind === 'absent' ? 'absent' : 'retrying';
          this.#lastError = answer.reason;
          pauseMs = answer.kind === 'absent' ? absentRetryMs : this.#backoff(failures, answer.retryAfterMs);
        }
      } catch (error) {
        if (this.#stop.signal.aborted) break;
        failures += 1;
        this.#state = 'retrying';
        this.#lastError =
          (error as Error).name === 'TimeoutError'
            ? 'the change notice did not answer in time'
            : `the change notice could not be reached (${(error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message})`;
        pauseMs = this.#backoff(failures);
      }
      if (pauseMs > 0) await this.#pause(pauseMs);
    }
  }

  #backoff(failures: number, retryAfterMs?: number): number {
    const { backoffMs, maxBackoffMs } = this.#options;
    const doubled = Math.min(maxBackoffMs, backoffMs * 2 ** Math.min(16, failures - 1));
    // Jitter (±20 %) so that a fleet of gates does not come back at the same instant.
    const jittered = doubled * (0.8 + Math.random() * 0.4);
    return Math.min(maxBackoffMs, Math.max(jittered, retryAfterMs ?? 0));
  }

  #pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#stop.signal.addEventListener('abort', done, { once: true });
    });
  }

  async #poll(): Promise<
    | { kind: 'answer'; changed: boolean; seq: number }
    | { kind: 'failed' | 'absent'; reason: string; retryAfterMs?: number }
  > {
    const after = this.#after ?? this.#options.seq();
    const url = new URL(this.#options.url);
    if (after !== undefined) url.searchParams.set('after', String(after));
    const response = await fetch(url, {
      headers: { authorization: `Bearer ${this.#options.key}`, accept: 'application/json' },
      // The reader key goes to the service's address only.
      redirect: 'error',
      signal: AbortSignal.any([this.#stop.signal, AbortSignal.timeout(this.#options.timeoutMs)]),
    });
    if (response.status !== 200) {
      await response.body?.cancel();
      const retryAfter = Number(response.headers.get('retry-after'));
      return {
        kind: response.status === 404 ? 'absent' : 'failed',
        reason: `the change notice answered ${response.status}`,
        ...(Number.isFinite(retryAfter) && retryAfter > 0 && { retryAfterMs: retryAfter * 1000 }),
      };
    }
    const text = await readCapped(response, 4096);
    let body: unknown;
    try {
      body = text === undefined ? undefined : JSON.parse(text);
    } catch {
      body = undefined;
    }
    const { changed, seq } = (body ?? {}) as { changed?: unknown; seq?: unknown };
    if (typeof changed !== 'boolean' || typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0)
      return { kind: 'failed', reason: 'the change notice answered something other than { changed, seq }' };
    return { kind: 'answer', changed, seq };
  }
}
