import type { AccessToken } from '../access-token.js';
import { raceSignal, startDeadline } from '../clock.js';
import {
  type PartnerAuthError,
  ScopeNotGrantedError,
  TokenAbortedError,
  TokenResponseError,
  TokenTimeoutError,
} from '../errors.js';
import { missingScopes, type ScopeSet } from '../scope-set.js';
import type { StoredToken } from '../token-store.js';
import { type Held, type HeldTokens, handOverBefore } from './held-tokens.js';
import type { ResolvedOptions } from './options.js';
import type { RequestGate } from './request-gate.js';
import type { StoreAccess } from './store-access.js';

/**
 * One turn of the event loop. A token that had to be waited for is handed over on a turn of its own
 * per caller, and checked again there: callers sharing one answer resume one after the other, so a
 * caller whose own code stalls the loop cannot make the next one resume with a token past its life.
 */
const nextTurn: () => Promise<void> =
  typeof setImmediate === 'function'
    ? () => new Promise((resolve) => setImmediate(resolve))
    : () => new Promise((resolve) => setTimeout(resolve, 0));

/**
 * A token that keeps arriving with less than its safety window left is renewed at most this often per
 * call without a deadline of its own (with one, until the deadline).
 */
const MAX_RENEWALS = 3;

/** An aborted or timed-out wait, inside the PartnerApiError family (the reason is the cause). */
export const stopped = (reason: unknown, timeoutMs: number | undefined): PartnerAuthError =>
  timeoutMs !== undefined || (reason instanceof DOMException && reason.name === 'TimeoutError')
    ? new TokenTimeoutError(timeoutMs, reason)
    : new TokenAbortedError(reason);

const notGranted = (wanted: ScopeSet, entry: StoredToken): ScopeNotGrantedError =>
  new ScopeNotGrantedError(missingScopes(wanted, entry.grantedScopes), entry.grantedScopes);

/** The slow path of getToken: memory, then the store, then the endpoint, never past the caller's limits. */
export class Lookup {
  readonly #options: ResolvedOptions;
  readonly #held: HeldTokens;
  readonly #store: StoreAccess;
  readonly #gate: RequestGate;

  constructor(options: ResolvedOptions, held: HeldTokens, store: StoreAccess, gate: RequestGate) {
    this.#options = options;
    this.#held = held;
    this.#store = store;
    this.#gate = gate;
  }

  /** A held token for `wanted`: the exact key (memory, then store), else a broader one that covers it. */
  async find(key: string, wanted: ScopeSet): Promise<Held | undefined> {
    const { memory } = this.#held;
    let exact = memory.get(key);
    if (exact === undefined || this.#options.clock.now() >= exact.hardAt) {
      const stored = await this.#store.get(key, wanted);
      // The store read took time: compare with the memory as it is now.
      exact = memory.get(key);
      if (stored !== undefined && (exact === undefined || stored.expiresAt > exact.entry.expiresAt)) {
        exact = this.#held.hold(key, stored, wanted);
      }
    }
    // Read after every await: a decision on a clock read before one could serve an expired token.
    const now = this.#options.clock.now();
    if (exact !== undefined && now < exact.hardAt && exact.covers) return exact;
    // A token granted a superset of the wanted scopes serves this narrower request as well.
    if (wanted.length > 0) return this.#held.broader(key, wanted, now, exact === undefined) ?? exact;
    return exact;
  }

  async #slowPath(
    key: string,
    wanted: ScopeSet,
    signal: AbortSignal | undefined,
    deadlineAt: number | undefined,
    minValidityMs: number | undefined,
  ): Promise<AccessToken> {
    const { clock, scopeRecheckMs } = this.#options;
    const held = this.#held;
    // The hand-over rule: a token is handed out only with at least its safety window (the hard
    // window) left, checked on the turn of the event loop its caller resumes on, after every await
    // (a slow store, a long shared request, a host that stalled). One with less left is renewed, not
    // handed out. A held token must also meet the caller's minValidityMs (capped, see handOverBefore);
    // a token received for this call needs only its safety window: it is the freshest there is.
    for (let round = 0; ; round++) {
      const found = await this.find(key, wanted);
      const now = clock.now();
      let fresh: Held;
      if (found !== undefined && now < handOverBefore(found, minValidityMs)) {
        if (missingScopes(wanted, found.entry.grantedScopes).length === 0) {
          if (now >= found.refreshAt) this.#gate.refreshInBackground(found.key, found, now);
          await nextTurn();
          if (clock.now() < handOverBefore(found, minValidityMs)) return held.serve(found);
          this.#tooLate(found, round, deadlineAt);
          continue;
        }
        // A decision made once is asked again (at most once per scopeRecheckMs): the console may have
        // granted the scope since.
        const last = this.#gate.askedAt.get(key);
        if (last !== undefined && now - last < scopeRecheckMs) throw notGranted(wanted, found.entry);
        fresh = await raceSignal(
          this.#gate.fetch(key, wanted, false, found.entry.accessToken, deadlineAt),
          signal,
        );
      } else {
        // While a (remote) store read was pending, another caller's request may have completed.
        const latest = held.memory.get(key);
        if (
          latest !== undefined &&
          latest !== found &&
          latest.covers &&
          now < handOverBefore(latest, minValidityMs)
        ) {
          await nextTurn();
          if (clock.now() < handOverBefore(latest, minValidityMs)) return held.serve(latest);
          this.#tooLate(latest, round, deadlineAt);
          continue;
        }
        try {
          fresh = await raceSignal(
            this.#gate.fetch(key, wanted, false, found?.entry.accessToken, deadlineAt),
            signal,
          );
        } catch (error) {
          // The endpoint is failing: a token that has not expired yet is still better than no token.
          if (
            !signal?.aborted &&
            found !== undefined &&
            found.entry.expiresAt > clock.now() &&
            missingScopes(wanted, found.entry.grantedScopes).length === 0
          ) {
            return held.serve(found);
          }
          throw error;
        }
      }
      if (missingScopes(wanted, fresh.entry.grantedScopes).length > 0) throw notGranted(wanted, fresh.entry);
      await nextTurn();
      if (clock.now() < fresh.hardAt) return fresh.view;
      this.#tooLate(fresh, round, deadlineAt);
    }
  }

  /**
   * A token reached its hand-over with less than its safety window left: renew, until the caller's
   * deadline when it has one (each round is one token request shared by every waiter, and the callers
   * who lost one hand-over are the first to wait for the next), else a bounded number of times.
   */
  #tooLate(token: Held, round: number, deadlineAt: number | undefined): void {
    if (deadlineAt === undefined ? round < MAX_RENEWALS : this.#options.clock.now() < deadlineAt) return;
    const left = token.entry.expiresAt - this.#options.clock.now();
    throw new TokenResponseError(
      `${round + 1} tokens in a row reached their caller with less than their safety window left (${token.entry.expiresAt - token.hardAt} ms; the last one ${left > 0 ? `${left} ms before` : `${-left} ms past`} its expiry at ${new Date(token.entry.expiresAt).toISOString()}); check this machine's clock, the token lifetime (expires_in) and whether the host stalls (CPU starvation, long synchronous work).`,
    );
  }

  /** The slow path under the caller's signal and time limit: it never waits past either. */
  async bounded(
    key: string,
    wanted: ScopeSet,
    signal: AbortSignal | undefined,
    timeoutMs: number | undefined,
    minValidityMs?: number,
  ): Promise<AccessToken> {
    const deadline =
      timeoutMs === undefined ? undefined : startDeadline(timeoutMs, `no token within ${timeoutMs} ms`);
    const limit =
      deadline === undefined ? signal : signal ? AbortSignal.any([signal, deadline.signal]) : deadline.signal;
    try {
      const deadlineAt = timeoutMs === undefined ? undefined : this.#options.clock.now() + timeoutMs;
      return await raceSignal(this.#slowPath(key, wanted, limit, deadlineAt, minValidityMs), limit);
    } catch (error) {
      if (limit?.aborted && error === limit.reason) {
        const timedOut = deadline?.signal.aborted === true && deadline.signal.reason === limit.reason;
        throw stopped(limit.reason, timedOut ? timeoutMs : undefined);
      }
      throw error;
    } finally {
      deadline?.clear();
    }
  }
}
