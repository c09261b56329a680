import type { AccessToken } from './access-token.js';
import { ConfigurationError } from './errors.js';
import { CacheKeys } from './provider/cache-key.js';
import { HeldTokens, handOverBefore } from './provider/held-tokens.js';
import { createJwtVerifier } from './provider/jwt-verifier.js';
import { Lookup, stopped } from './provider/lookup.js';
import { Obtainer } from './provider/obtain.js';
import { resolveOptions, type TokenProvider, type TokenProviderOptions } from './provider/options.js';
import { RequestGate } from './provider/request-gate.js';
import { type OwnIdentity, StoreAccess } from './provider/store-access.js';
import { shortenToken } from './redact.js';
import type { ScopeSet } from './scope-set.js';

export { ALLOWED_ALGORITHMS } from './provider/jwt-verifier.js';
export type {
  GetTokenOptions,
  PartnerEnvironment,
  RefreshOptions,
  TokenProvider,
  TokenProviderOptions,
  VerifyOptions,
} from './provider/options.js';

/**
 * Creates a client-credentials token provider (Partner Lending API — Authentication and Access §4.1
 * and §5). The parts, each in provider/: options (checked, defaults), the JWT verifier, cache keys, the
 * refresh plan (pure), the held tokens, store access, obtaining a token, the request gate (one flight
 * per key, throttle, pause) and the slow-path lookup. Here: the warm path and invalidation.
 */
export function createTokenProvider(options: TokenProviderOptions): TokenProvider {
  const resolved = resolveOptions(options);
  const { clock } = resolved;
  const verifyJwt = createJwtVerifier(options.verify, {
    fetch: resolved.fetch,
    clock,
    clockSkewMs: resolved.clockSkewMs,
    allowInsecure: resolved.allowInsecure,
  });
  const keys = new CacheKeys(
    resolved.clientId,
    resolved.tokenUrl,
    resolved.audience,
    resolved.defaultScopes,
    resolved.environment,
  );
  const held = new HeldTokens(resolved);
  const own: OwnIdentity = { partnerId: undefined };
  const store = new StoreAccess(resolved, verifyJwt, own, options.verify?.issuer);
  const obtainer = new Obtainer(resolved, verifyJwt, own, store);
  const gate = new RequestGate(resolved, held, store, obtainer);
  const lookup = new Lookup(resolved, held, store, gate);
  const { memory, covering } = held;

  const self: TokenProvider = {
    ...(resolved.environment === undefined ? {} : { environment: resolved.environment }),
    getToken(getOptions = {}) {
      const { signal, timeoutMs, minValidityMs } = getOptions;
      if (signal?.aborted) return Promise.reject(stopped(signal.reason, undefined));
      if (
        timeoutMs !== undefined &&
        (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0)
      ) {
        return Promise.reject(
          new ConfigurationError(
            `getToken: timeoutMs must be a finite number > 0, got ${String(timeoutMs)}.`,
          ),
        );
      }
      if (
        minValidityMs !== undefined &&
        (typeof minValidityMs !== 'number' || !Number.isFinite(minValidityMs) || minValidityMs < 0)
      ) {
        return Promise.reject(
          new ConfigurationError(
            `getToken: minValidityMs must be a finite number ≥ 0 (ms of life the token must still have), got ${String(minValidityMs)}.`,
          ),
        );
      }
      if (!keys.ready) return keys.prepare().then(() => self.getToken(getOptions));
      let key: string;
      let wanted: ScopeSet;
      try {
        ({ key, wanted } = keys.resolve(getOptions.scopes));
      } catch (error) {
        return Promise.reject(error);
      }
      // The warm path: no await, no allocation beyond the event.
      const current = memory.get(key);
      if (current === undefined) {
        // A narrower request served by a broader token held under another key.
        const broader = covering.get(key);
        if (
          broader !== undefined &&
          memory.get(broader.key) === broader &&
          clock.now() < broader.refreshAt &&
          (minValidityMs === undefined || clock.now() < handOverBefore(broader, minValidityMs))
        ) {
          return Promise.resolve(held.serve(broader));
        }
      } else if (
        current.covers &&
        clock.now() < current.refreshAt &&
        (minValidityMs === undefined || clock.now() < handOverBefore(current, minValidityMs))
      ) {
        return Promise.resolve(held.serve(current));
      }
      return lookup.bounded(key, wanted, signal, timeoutMs, minValidityMs);
    },

    async invalidate(token?: AccessToken | string) {
      await keys.prepare();
      const target = typeof token === 'string' ? token : token?.accessToken;
      for (const [key, scopes] of held.known) {
        const current = memory.get(key);
        const stored = current === undefined ? await store.get(key, scopes) : current.entry;
        if (stored === undefined || (target !== undefined && stored.accessToken !== target)) continue;
        memory.delete(key);
        await store.delete(key);
        resolved.emit({ type: 'invalidated', scopes, token: shortenToken(stored.accessToken) });
      }
    },
  };
  return self;
}
