import { TokenThrottledError } from '../errors.js';
import { shortenToken } from '../redact.js';
import type { ScopeSet } from '../scope-set.js';
import type { Held, HeldTokens } from './held-tokens.js';
import { type Obtainer, throttledError } from './obtain.js';
import type { ResolvedOptions } from './options.js';
import type { StoreAccess } from './store-access.js';

/**
 * The gate in front of the token endpoint: one request in flight per key (every caller shares it), a
 * throttled key fails fast, and after a failed sequence the next one waits (one shared retry schedule).
 */
export class RequestGate {
  readonly #options: ResolvedOptions;
  readonly #held: HeldTokens;
  readonly #store: StoreAccess;
  readonly #obtainer: Obtainer;
  readonly #inflight = new Map<string, Promise<Held>>();
  /** After a failed request sequence, the next one for the key waits: one shared retry schedule. */
  readonly #paused = new Map<string, { until: number; error: unknown; failures: number }>();
  /** When each key last got an answer from the token endpoint (for scopeRecheckMs). */
  readonly askedAt = new Map<string, number>();

  constructor(options: ResolvedOptions, held: HeldTokens, store: StoreAccess, obtainer: Obtainer) {
    this.#options = options;
    this.#held = held;
    this.#store = store;
    this.#obtainer = obtainer;
  }

  /** A token for `key` from the endpoint, shared with every caller asking meanwhile. */
  fetch(
    key: string,
    scopes: ScopeSet,
    background: boolean,
    replacing?: string,
    deadlineAt?: number,
  ): Promise<Held> {
    const existing = this.#inflight.get(key);
    if (existing) return existing;
    const { clock, emit, sleep, store, retry } = this.#options;
    const throttledUntil = this.#obtainer.throttledUntil;
    const now = clock.now();
    const until = throttledUntil.get(key);
    if (until !== undefined) {
      const left = until - now;
      if (left > 0) {
        emit({ type: 'throttled', scopes, retryAfterMs: left });
        return Promise.reject(throttledError(scopes, left, clock.now()));
      }
      throttledUntil.delete(key);
    }
    const pause = this.#paused.get(key);
    if (pause !== undefined && pause.until > now) return Promise.reject(pause.error);
    const promise = (async () => {
      try {
        // Another process may already have put a newer token in the shared store.
        if (store !== undefined && replacing !== undefined) {
          const newer = await this.#store.get(key, scopes);
          if (newer !== undefined && newer.accessToken !== replacing) {
            const held = this.#held.hold(key, newer, scopes);
            if (clock.now() < held.refreshAt) return held;
          }
        }
        // A whole-second token is replaced from its exp on (see planRefresh): asked for earlier, the
        // new one would expire only a second later.
        const current = this.#held.memory.get(key);
        if (current !== undefined && current.entry.accessToken === replacing) {
          const wait = current.renewAt - clock.now();
          if (wait > 0 && (deadlineAt === undefined || current.renewAt < deadlineAt)) await sleep(wait);
        }
        const entry = await this.#obtainer.obtain(key, scopes, background, replacing, deadlineAt);
        this.askedAt.set(key, clock.now());
        this.#paused.delete(key);
        throttledUntil.delete(key);
        const held = this.#held.hold(key, entry, scopes);
        emit({
          type: 'token-received',
          scopes,
          grantedScopes: entry.grantedScopes,
          token: shortenToken(entry.accessToken),
          expiresAt: entry.expiresAt,
          background,
        });
        return held;
      } catch (error) {
        // A throttle has its own fail-fast window (throttledUntil): no pause on top of it.
        if (!(error instanceof TokenThrottledError)) {
          const failures = (this.#paused.get(key)?.failures ?? 0) + 1;
          // A failed refresh (background, or of a token still held) pauses for retry.maxDelayMs: callers
          // keep the token meanwhile. A failed wait for a first token pauses for the backoff bound of
          // its failure count. Callers within the pause share the failure instead of starting a sequence.
          const pauseMs =
            background || replacing !== undefined
              ? retry.maxDelayMs
              : Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (failures - 1));
          this.#paused.set(key, { until: clock.now() + pauseMs, error, failures });
        }
        emit({
          type: 'token-request-failed',
          scopes,
          code: (error as { code?: string }).code ?? 'ERR_UNKNOWN',
          message: error instanceof Error ? error.message : String(error),
          background,
        });
        throw error;
      } finally {
        this.#inflight.delete(key);
      }
    })();
    this.#inflight.set(key, promise);
    return promise;
  }

  /** One background refresh of `held` unless one runs, or the key is throttled or paused. */
  refreshInBackground(key: string, held: Held, now: number): void {
    if (this.#inflight.has(key)) return;
    const until = this.#obtainer.throttledUntil.get(key);
    if (until !== undefined && until > now) return;
    const pause = this.#paused.get(key);
    if (pause !== undefined && pause.until > now) return;
    this.#options.emit({
      type: 'background-refresh',
      scopes: held.scopes,
      token: shortenToken(held.entry.accessToken),
      expiresAt: held.entry.expiresAt,
    });
    // Failures are reported through onEvent; callers keep the current token meanwhile.
    this.fetch(key, held.scopes, true, held.entry.accessToken).catch(() => {});
  }
}
