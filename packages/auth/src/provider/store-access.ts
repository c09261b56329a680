import { redactTokens, shortenToken } from '../redact.js';
import type { ScopeSet } from '../scope-set.js';
import { checkStoredEntry, FOREIGN_ENTRY, type StoredEntryProblem } from '../stored-entry.js';
import type { StoredToken } from '../token-store.js';
import type { JwtVerifier } from './jwt-verifier.js';
import type { ResolvedOptions } from './options.js';

/** What the provider learnt of itself from the token endpoint: stored tokens must match it. */
export interface OwnIdentity {
  /** The partner id of the tokens this provider got from the endpoint itself. */
  partnerId: string | undefined;
}

/**
 * The shared store as the provider uses it: best-effort (a failure is reported and the provider goes
 * on with its own memory), and every entry read checked as a token-endpoint answer is.
 */
export class StoreAccess {
  readonly #options: ResolvedOptions;
  readonly #verifyJwt: JwtVerifier | undefined;
  readonly #own: OwnIdentity;
  readonly #issuer: string | undefined;

  constructor(
    options: ResolvedOptions,
    verifyJwt: JwtVerifier | undefined,
    own: OwnIdentity,
    issuer: string | undefined,
  ) {
    this.#options = options;
    this.#verifyJwt = verifyJwt;
    this.#own = own;
    this.#issuer = issuer;
  }

  failed(operation: 'get' | 'set' | 'delete' | 'singleFlight', error: unknown): void {
    this.#options.emit({
      type: 'store-failed',
      operation,
      message: redactTokens(error instanceof Error ? error.message : String(error)).slice(0, 300),
    });
  }

  /**
   * What a store handed back, checked as a token-endpoint answer is: another process (or whoever can
   * write to the store) put it there. Served only when it is alive and for this audience, client,
   * partner and issuer (and verifies, with `verify`); otherwise a miss, reported, and an entry that
   * can never be right under this key is deleted.
   */
  async admit(key: string, scopes: ScopeSet, value: unknown): Promise<StoredToken | undefined> {
    if (value === undefined || value === null) return undefined;
    const { clock, audience, clientId, store, emit } = this.#options;
    // Loaded on the first token, not at import (see jwt-verifier); the provider has it by now.
    const { decodeJwt } = await import('jose');
    const checked = checkStoredEntry(
      value,
      { now: clock.now(), audience, clientId, partnerId: this.#own.partnerId, issuer: this.#issuer },
      decodeJwt,
    );
    let problem: StoredEntryProblem | undefined = 'problem' in checked ? checked.problem : undefined;
    if (problem === undefined && this.#verifyJwt !== undefined) {
      try {
        await this.#verifyJwt((value as StoredToken).accessToken);
      } catch {
        problem = 'signature';
      }
    }
    if (problem === undefined) return (checked as { entry: StoredToken }).entry;
    const token = (value as { accessToken?: unknown }).accessToken;
    emit({
      type: 'store-entry-rejected',
      scopes,
      reason: problem,
      ...(typeof token === 'string' ? { token: shortenToken(token) } : {}),
    });
    if (store !== undefined && FOREIGN_ENTRY.has(problem)) {
      store.delete(key).catch((error: unknown) => this.failed('delete', error));
    }
    return undefined;
  }

  async get(key: string, scopes: ScopeSet): Promise<StoredToken | undefined> {
    const { store } = this.#options;
    if (store === undefined) return undefined;
    let value: unknown;
    try {
      value = await store.get(key);
    } catch (error) {
      this.failed('get', error);
      return undefined;
    }
    return this.admit(key, scopes, value);
  }

  async set(key: string, entry: StoredToken): Promise<void> {
    const { store, clock } = this.#options;
    if (store === undefined) return;
    try {
      await store.set(key, entry, entry.expiresAt - clock.now());
    } catch (error) {
      this.failed('set', error);
    }
  }

  async delete(key: string): Promise<void> {
    const { store } = this.#options;
    if (store === undefined) return;
    try {
      await store.delete(key);
    } catch (error) {
      this.failed('delete', error);
    }
  }
}
