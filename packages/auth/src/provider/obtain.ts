import {
  NotApprovedForProductionError,
  PartnerAuthError,
  TokenRequestError,
  TokenThrottledError,
} from '../errors.js';
import type { ScopeSet } from '../scope-set.js';
import { MAX_THROTTLE_MS, sendTokenRequest } from '../token-request.js';
import { processTokenResponse } from '../token-response.js';
import type { StoredToken } from '../token-store.js';
import type { JwtVerifier } from './jwt-verifier.js';
import type { ResolvedOptions } from './options.js';
import type { OwnIdentity, StoreAccess } from './store-access.js';

/** The error of a key whose token requests are paused by the endpoint's Retry-After. */
export function throttledError(scopes: ScopeSet, left: number, now: number): TokenThrottledError {
  return new TokenThrottledError(
    `token requests for scopes "${scopes.join(' ')}" are paused for another ${Math.ceil(left / 1000)} s because the token endpoint asked to retry later (429/503 Retry-After); retry after that.`,
    left,
    { now },
  );
}

/** Getting a token from the endpoint: one request sequence, or the shared store's single flight. */
export class Obtainer {
  readonly #options: ResolvedOptions;
  readonly #verifyJwt: JwtVerifier | undefined;
  readonly #own: OwnIdentity;
  readonly #store: StoreAccess;
  /** Until when token requests of a key fail fast (the endpoint's Retry-After). */
  readonly throttledUntil = new Map<string, number>();
  /** Time a whole request sequence may take: every attempt and the waits between them. */
  readonly #sequenceBudgetMs: number;

  constructor(
    options: ResolvedOptions,
    verifyJwt: JwtVerifier | undefined,
    own: OwnIdentity,
    store: StoreAccess,
  ) {
    this.#options = options;
    this.#verifyJwt = verifyJwt;
    this.#own = own;
    this.#store = store;
    const { retry, requestTimeoutMs } = options;
    this.#sequenceBudgetMs =
      requestTimeoutMs * (retry.maxRetries + 1) +
      Math.max(retry.maxDelayMs, retry.maxRetryAfterMs) * retry.maxRetries;
  }

  /** Sends the token request (with its retries) and validates the answer. */
  async request(
    scopes: ScopeSet,
    background: boolean,
    key: string,
    deadlineAt: number | undefined,
  ): Promise<StoredToken> {
    const o = this.#options;
    const entry = await this.#send(scopes, background, key, deadlineAt).catch((error: unknown) => {
      // Production refuses a partner that is not approved with unauthorized_client (RFC 6749 §5.2).
      if (
        o.environment === 'production' &&
        error instanceof TokenRequestError &&
        !(error instanceof NotApprovedForProductionError) &&
        error.error === 'unauthorized_client'
      )
        throw NotApprovedForProductionError.from(error);
      throw error;
    });
    this.#own.partnerId = entry.partnerId;
    return entry;
  }

  #send(scopes: ScopeSet, background: boolean, key: string, deadlineAt: number | undefined) {
    const o = this.#options;
    return sendTokenRequest(
      {
        tokenUrl: o.tokenUrl,
        clientId: o.clientId,
        clientSecret: o.clientSecret,
        audience: o.audience,
        scopes,
        clientAuth: o.clientAuth,
      },
      {
        fetch: o.fetch,
        clock: o.clock,
        sleep: o.sleep,
        random: o.random,
        retry: o.retry,
        requestTimeoutMs: o.requestTimeoutMs,
        background,
        emit: o.emit,
        deadlineAt,
        onThrottle: (until) => this.throttledUntil.set(key, until),
        process: (response, requestedAt) =>
          processTokenResponse(response, {
            requestedAt,
            now: o.clock.now(),
            audience: o.audience,
            requestedScopes: scopes,
            clockSkewMs: o.clockSkewMs,
            verifyJwt: this.#verifyJwt,
          }),
      },
    );
  }

  /** Gets a token from the endpoint, through the shared store's single flight when it has one. */
  async obtain(
    key: string,
    scopes: ScopeSet,
    background: boolean,
    replacing: string | undefined,
    deadlineAt: number | undefined,
  ): Promise<StoredToken> {
    const { store, clock, emit } = this.#options;
    if (store?.singleFlight === undefined) {
      const entry = await this.request(scopes, background, key, deadlineAt);
      await this.#store.set(key, entry);
      return entry;
    }
    // Whatever our own request did is kept apart from what the store did, so that a store failure
    // never costs a second request nor throws away a token just received.
    let own: { ok: true; entry: StoredToken } | { ok: false; error: unknown } | undefined;
    const fetchToken = async () => {
      try {
        const entry = await this.request(scopes, background, key, deadlineAt);
        own = { ok: true, entry };
        return entry;
      } catch (error) {
        own = { ok: false, error };
        throw error;
      }
    };
    let shared: unknown;
    try {
      shared = await store.singleFlight(key, fetchToken, {
        timeoutMs: this.#sequenceBudgetMs,
        ...(replacing === undefined ? {} : { replacing }),
      });
    } catch (error) {
      const ownResult = own as typeof own;
      if (ownResult?.ok === false && (error === ownResult.error || error instanceof PartnerAuthError)) {
        throw error;
      }
      // Another process was told to retry later (the store shares the throttle): fail fast with it,
      // without a request of our own against an endpoint that throttles.
      const until = (error as { throttledUntil?: unknown } | null)?.throttledUntil;
      if (ownResult === undefined && typeof until === 'number' && until > clock.now()) {
        const left = Math.min(until - clock.now(), MAX_THROTTLE_MS);
        this.throttledUntil.set(key, clock.now() + left);
        emit({ type: 'throttled', scopes, retryAfterMs: left });
        throw throttledError(scopes, left, clock.now());
      }
      this.#store.failed('singleFlight', error);
      if (ownResult?.ok === true) return ownResult.entry;
      return this.request(scopes, background, key, deadlineAt);
    }
    const ownResult = own as typeof own;
    if (ownResult?.ok === true && shared === ownResult.entry) return ownResult.entry;
    const entry = await this.#store.admit(key, scopes, shared);
    if (entry !== undefined && entry.accessToken !== replacing) return entry;
    if (entry !== undefined) {
      // Reported as a store failure (its message only): the store broke its contract, nothing was thrown.
      this.#store.failed('singleFlight', 'singleFlight resolved with the token being replaced');
    }
    if (ownResult?.ok === true) return ownResult.entry;
    const mine = await this.request(scopes, background, key, deadlineAt);
    await this.#store.set(key, mine);
    return mine;
  }
}
