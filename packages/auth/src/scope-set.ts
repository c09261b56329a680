import { ConfigurationError } from './errors.js';

/**
 * A set of OAuth scopes (RFC 6749 §3.3): space-delimited, case-sensitive, order-free. Requests send
 * them sorted and deduplicated so that equal sets always produce the same cache key and form body.
 */
export type ScopeSet = readonly string[];

const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/** Sorts and deduplicates scopes; throws a ConfigurationError for a value that RFC 6749 §3.3 does not allow. */
export function normalizeScopes(scopes: Iterable<string>): ScopeSet {
  const unique = new Set<string>();
  for (const scope of scopes) {
    if (typeof scope !== 'string' || !SCOPE_TOKEN.test(scope)) {
      throw new ConfigurationError(
        `scope ${JSON.stringify(scope)} is not a valid OAuth scope token (RFC 6749 §3.3: printable ASCII without spaces, quotes or backslashes); pass scopes such as "read:loans".`,
      );
    }
    unique.add(scope);
  }
  return [...unique].sort();
}

/** Parses the space-separated `scope` field of a token response into a normalised set. */
export function parseScopeString(value: string): ScopeSet {
  return normalizeScopes(value.split(' ').filter((part) => part !== ''));
}

/** The scopes of `wanted` that `granted` lacks, in sorted order. */
export function missingScopes(wanted: ScopeSet, granted: ScopeSet): ScopeSet {
  const have = new Set(granted);
  return wanted.filter((scope) => !have.has(scope));
}
