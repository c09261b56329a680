import { type AccessToken, toAccessToken } from '../access-token.js';
import { shortenToken } from '../redact.js';
import { missingScopes, type ScopeSet } from '../scope-set.js';
import type { StoredToken } from '../token-store.js';
import type { ResolvedOptions } from './options.js';
import { planRefresh, type RefreshPlan } from './refresh-plan.js';

/** A token this provider holds, with its refresh plan drawn once (so the jitter is stable). */
export interface Held extends RefreshPlan {
  /** The cache key it is held under. */
  key: string;
  entry: StoredToken;
  scopes: ScopeSet;
  /** The token covers every scope its key names. */
  covers: boolean;
  view: AccessToken;
}

/** A caller's `minValidityMs` asks for at most this share of a token's lifetime (see handOverBefore). */
export const MIN_VALIDITY_SHARE = 0.5;

/**
 * Until when `held` may be handed to a caller asking for `minValidityMs` of life: before its hard
 * window (the safety window), and before `minValidityMs` of its life is left — that wish capped at
 * half the token's lifetime, so that a token in the first half of its life always serves (at most two
 * token requests per lifetime, whatever callers ask) and a token just received is never refused.
 */
export function handOverBefore(held: Held, minValidityMs: number | undefined): number {
  if (minValidityMs === undefined || minValidityMs <= 0) return held.hardAt;
  const { expiresAt, obtainedAt } = held.entry;
  const wish = Math.min(minValidityMs, MIN_VALIDITY_SHARE * Math.max(0, expiresAt - obtainedAt));
  return Math.min(held.hardAt, expiresAt - wish);
}

/**
 * The provider's own memory: tokens are served from here even when a shared store fails. The maps are
 * read directly by the warm path of getToken (no await, no allocation).
 */
export class HeldTokens {
  readonly memory = new Map<string, Held>();
  /** Narrower keys served by a broader token held under another key (the scoped fast path). */
  readonly covering = new Map<string, Held>();
  /** Keys this provider has seen, with the scopes they were requested for. */
  readonly known = new Map<string, ScopeSet>();
  readonly #options: Pick<ResolvedOptions, 'windows' | 'random' | 'observed' | 'emit'>;

  constructor(options: Pick<ResolvedOptions, 'windows' | 'random' | 'observed' | 'emit'>) {
    this.#options = options;
  }

  /** Holds `entry` under `key` (the same token twice keeps its plan). */
  hold(key: string, entry: StoredToken, scopes: ScopeSet): Held {
    const current = this.memory.get(key);
    if (current !== undefined && current.entry.accessToken === entry.accessToken) return current;
    const held: Held = {
      key,
      entry,
      scopes,
      ...planRefresh(entry, this.#options.windows, this.#options.random),
      covers: missingScopes(scopes, entry.grantedScopes).length === 0,
      view: toAccessToken(entry),
    };
    this.memory.set(key, held);
    this.known.set(key, scopes);
    return held;
  }

  /**
   * A token held under another key than `key`, not past its hard window, granted every `wanted` scope;
   * `remember` keeps it as `key`'s cover, so the next call for these scopes takes the warm path.
   */
  broader(key: string, wanted: ScopeSet, now: number, remember: boolean): Held | undefined {
    for (const [otherKey, other] of this.memory) {
      if (otherKey === key || now >= other.hardAt) continue;
      if (missingScopes(wanted, other.entry.grantedScopes).length === 0) {
        // Remembered, so that the next call for these scopes takes the warm path.
        if (remember && (this.covering.has(key) || this.covering.size < 64)) this.covering.set(key, other);
        return other;
      }
    }
    return undefined;
  }

  /** Hands a held token to a caller (reported as a cache hit when someone observes). */
  serve(held: Held): AccessToken {
    if (this.#options.observed) {
      this.#options.emit({
        type: 'cache-hit',
        scopes: held.scopes,
        token: shortenToken(held.entry.accessToken),
        expiresAt: held.entry.expiresAt,
      });
    }
    return held.view;
  }
}
