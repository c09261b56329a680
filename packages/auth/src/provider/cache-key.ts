import { normalizeScopes, type ScopeSet } from '../scope-set.js';

/** A cache key and the normalised scopes it stands for. */
export interface ResolvedScopes {
  key: string;
  wanted: ScopeSet;
}

/**
 * The provider's cache keys: `partner-lending-auth:v1|<token URL>|<client tag>|<audience>|<scopes>`, and
 * `partner-lending-auth:v1|env=<environment>|…` for a provider given an environment, so that a store
 * shared by staging and production processes never mixes their tokens (a token URL is never `env=…`).
 * The client id is a credential (API documentation §2.1): keys carry a hash of it, never the id itself.
 * Web Crypto (globalThis.crypto) is in Node ≥ 20 and every edge and worker runtime: no Node built-in.
 */
export class CacheKeys {
  #prefix = '';
  #preparing: Promise<void> | undefined;
  readonly #keys = new Map<string, string>();
  /** Normalised scopes and key per scopes array the caller passes (the SDK passes the same arrays). */
  readonly #resolved = new WeakMap<readonly string[], ResolvedScopes>();
  /** The same for one-scope arrays built per call (`{ scopes: ['read:loans'] }`), by the scope. */
  readonly #single = new Map<string, ResolvedScopes>();
  #default: ResolvedScopes | undefined;

  readonly #clientId: string;
  readonly #tokenUrl: URL;
  readonly #audience: string;
  readonly #defaultScopes: ScopeSet;
  readonly #environment: string | undefined;

  constructor(
    clientId: string,
    tokenUrl: URL,
    audience: string,
    defaultScopes: ScopeSet,
    environment?: string | undefined,
  ) {
    this.#environment = environment;
    this.#clientId = clientId;
    this.#tokenUrl = tokenUrl;
    this.#audience = audience;
    this.#defaultScopes = defaultScopes;
  }

  /** True once the prefix is computed (`prepare()`); the warm path needs no await after that. */
  get ready(): boolean {
    return this.#prefix !== '';
  }

  prepare(): Promise<void> {
    this.#preparing ??= globalThis.crypto.subtle
      .digest('SHA-256', new TextEncoder().encode(this.#clientId))
      .then((digest) => {
        const clientTag = [...new Uint8Array(digest).slice(0, 8)]
          .map((byte) => byte.toString(16).padStart(2, '0'))
          .join('');
        const environment = this.#environment === undefined ? '' : `env=${this.#environment}|`;
        this.#prefix = `partner-lending-auth:v1|${environment}${this.#tokenUrl.href}|${clientTag}|${this.#audience}|`;
      });
    return this.#preparing;
  }

  keyFor(scopes: ScopeSet): string {
    const joined = scopes.join(' ');
    let key = this.#keys.get(joined);
    if (key === undefined) {
      key = this.#prefix + joined;
      this.#keys.set(joined, key);
    }
    return key;
  }

  /** The key and normalised scopes of a caller's scopes (the provider's default when none). */
  resolve(scopes: readonly string[] | undefined): ResolvedScopes {
    if (scopes === undefined) {
      this.#default ??= { key: this.keyFor(this.#defaultScopes), wanted: this.#defaultScopes };
      return this.#default;
    }
    let hit =
      this.#resolved.get(scopes) ?? (scopes.length === 1 ? this.#single.get(scopes[0] as string) : undefined);
    if (hit === undefined) {
      const wanted = normalizeScopes(scopes);
      hit = { key: this.keyFor(wanted), wanted };
      if (Object.isFrozen(scopes)) this.#resolved.set(scopes, hit);
      else if (scopes.length === 1 && this.#single.size < 64) this.#single.set(scopes[0] as string, hit);
    }
    return hit;
  }
}
