import { containsAudience } from './token-response.js';
import type { StoredToken } from './token-store.js';

/**
 * Why a token a store handed back was not served. A shared store holds what any process (or anyone
 * who can write to it) put there: the provider checks each entry against what it asked for first.
 */
export type StoredEntryProblem =
  /** Not token data, or the access token is not a decodable JWT. */
  | 'malformed'
  /** Expired, or its `expiresAt` is later than the JWT's `exp`. */
  | 'expired'
  /** The JWT `aud` does not contain this provider's audience. */
  | 'audience'
  /** The JWT names another client (`client_id` or `azp` claim). */
  | 'client'
  /** Another partner than the entry, the JWT or this provider's own tokens say. */
  | 'partner'
  /** Another issuer than the JWT or `verify.issuer` says. */
  | 'issuer'
  /** The granted scopes differ from the JWT `scope` claim. */
  | 'scope'
  /** `verify` is set and the JWT signature or claims did not verify. */
  | 'signature';

/** Problems that mean the entry can never be right under this key: the provider deletes it. */
export const FOREIGN_ENTRY: ReadonlySet<StoredEntryProblem> = new Set([
  'malformed',
  'audience',
  'client',
  'partner',
  'issuer',
  'scope',
  'signature',
]);

export interface StoredEntryContext {
  now: number;
  audience: string;
  clientId: string;
  /** The partner id of this provider's own tokens, once it has received one from the endpoint. */
  partnerId: string | undefined;
  /** `verify.issuer`, when set. */
  issuer: string | undefined;
}

function isShape(value: unknown): value is StoredToken {
  if (typeof value !== 'object' || value === null) return false;
  const entry = value as Record<string, unknown>;
  return (
    typeof entry.accessToken === 'string' &&
    entry.accessToken !== '' &&
    typeof entry.expiresAt === 'number' &&
    Number.isFinite(entry.expiresAt) &&
    typeof entry.obtainedAt === 'number' &&
    Number.isFinite(entry.obtainedAt) &&
    Array.isArray(entry.grantedScopes) &&
    entry.grantedScopes.every((scope) => typeof scope === 'string') &&
    typeof entry.partnerId === 'string' &&
    typeof entry.issuer === 'string'
  );
}

function scopesOf(claim: unknown): string[] | undefined {
  if (typeof claim === 'string') return claim.split(' ').filter((s) => s !== '');
  if (Array.isArray(claim) && claim.every((s) => typeof s === 'string')) return claim as string[];
  return undefined;
}

/**
 * Checks an entry a store returned against what this provider would accept from the token endpoint
 * (the same audience, client, partner, issuer and an unexpired `exp`), its JWT read with `decode`
 * (jose's `decodeJwt`). Returns the entry or the problem. Signature verification is the caller's.
 */
export function checkStoredEntry(
  value: unknown,
  ctx: StoredEntryContext,
  decode: (jwt: string) => Record<string, unknown>,
): { entry: StoredToken } | { problem: StoredEntryProblem } {
  if (!isShape(value)) return { problem: 'malformed' };
  let claims: Record<string, unknown>;
  try {
    claims = decode(value.accessToken);
  } catch {
    return { problem: 'malformed' };
  }
  const { exp, aud } = claims;
  if (typeof exp !== 'number' || !Number.isFinite(exp)) return { problem: 'malformed' };
  if (value.expiresAt > exp * 1000 || value.expiresAt <= ctx.now || value.obtainedAt > value.expiresAt) {
    return { problem: 'expired' };
  }
  if (!containsAudience(aud, ctx.audience)) return { problem: 'audience' };
  for (const name of ['client_id', 'azp']) {
    const claim = claims[name];
    if (typeof claim === 'string' && claim !== ctx.clientId) return { problem: 'client' };
  }
  const claimPartner = claims.partnerId;
  if (
    (typeof claimPartner === 'string' && claimPartner !== value.partnerId) ||
    (ctx.partnerId !== undefined && value.partnerId !== ctx.partnerId)
  ) {
    return { problem: 'partner' };
  }
  const claimIssuer = claims.iss;
  if (
    (typeof claimIssuer === 'string' && claimIssuer !== value.issuer) ||
    (ctx.issuer !== undefined && value.issuer !== ctx.issuer)
  ) {
    return { problem: 'issuer' };
  }
  const claimScopes = scopesOf(claims.scope);
  if (claimScopes !== undefined) {
    const granted = new Set(value.grantedScopes);
    const claimed = new Set(claimScopes);
    if (granted.size !== claimed.size || [...granted].some((scope) => !claimed.has(scope))) {
      return { problem: 'scope' };
    }
  }
  return { entry: value };
}
