import { isScope, type Scope, scopes } from '@partner-lending/spec';

/**
 * Splits an RFC 6749 §3.3 scope string on spaces. Returns undefined when a scope token holds a
 * character outside %x21 / %x23-5B / %x5D-7E (a malformed request, not an unknown scope).
 */
export function parseScopeString(value: string): string[] | undefined {
  const tokens = value.split(' ').filter((token) => token.length > 0);
  if (!tokens.every((token) => /^[\x21\x23-\x5b\x5d-\x7e]+$/.test(token))) return undefined;
  return [...new Set(tokens)];
}

/** Keeps the known scopes of `values`, in spec order, without duplicates. */
export function knownScopes(values: Iterable<string>): Scope[] {
  const set = new Set(values);
  return scopes.filter((scope) => set.has(scope));
}

/** requested ∩ authorised, in spec order; unknown requested values are dropped. */
export function intersectScopes(requested: readonly string[], authorised: readonly string[]): Scope[] {
  const allowed = new Set(authorised);
  return knownScopes(requested.filter((scope) => isScope(scope) && allowed.has(scope)));
}

/** Reads the scope claim of a token: an array of strings (deployed) or a space-separated string (RFC 9068). */
export function scopesOfClaim(claim: unknown): string[] | undefined {
  if (typeof claim === 'string') return claim.split(' ').filter((token) => token.length > 0);
  if (Array.isArray(claim) && claim.every((item) => typeof item === 'string')) return claim as string[];
  return undefined;
}
