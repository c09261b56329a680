import { verify } from 'node:crypto';
import { compactVerify, importJWK, type JWK } from 'jose';
import type { BoundedCache } from './bounded-cache.js';
import type { FaultSet } from './faults.js';
import type { KeySet } from './jwks.js';
import type { Profile } from './profile.js';
import { scopesOfClaim } from './scope-set.js';
import { wrongAudience } from './token-response.js';

/** What the resource server needs from a valid access token. */
export interface AccessTokenClaims {
  readonly partnerId: string;
  readonly scopes: readonly string[];
  readonly clientId: string | undefined;
  /** `iat` (epoch seconds) and `jti`, when the token has them: a revocation is decided on them. */
  readonly issuedAt?: number;
  readonly jti?: string;
}

export type AccessTokenResult =
  | { readonly valid: true; readonly claims: AccessTokenClaims }
  | {
      readonly valid: false;
      readonly description: string;
      readonly malformed: boolean;
      /** The partner a refused token names when its signature verified (expired, say): for evidence. */
      readonly partnerId?: string;
    };

export interface ValidatorContext {
  readonly keys: KeySet;
  readonly issuer: string;
  readonly audience: string;
  readonly profile: Profile;
  readonly clock: () => number;
  readonly leewaySeconds: number;
  readonly faults: FaultSet;
  /**
   * Tokens whose form and signature were already verified, by exact token string. Used only without
   * faults (a fault changes what verification means); claims are checked on every request.
   */
  readonly verified?: BoundedCache<string, VerifiedToken>;
}

/** What a verified token's form and signature checks established. */
export interface VerifiedToken {
  readonly header: Record<string, unknown>;
  readonly payload: Record<string, unknown>;
  /** The key that verified it: the cached result holds only while the JWKS publishes this kid. */
  readonly kid: string;
}

/** The only signing algorithm accepted (RFC 8725 §3.1: an explicit allow-list). */
export const allowedAlgorithms = ['RS256'] as const;

const b64url = /^[A-Za-z0-9_-]*$/;

function decodeJsonObject(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

const invalid = (description: string, malformed = false, partnerId?: unknown): AccessTokenResult => ({
  valid: false,
  description,
  malformed,
  ...(typeof partnerId === 'string' && { partnerId }),
});

async function verifies(token: string, key: CryptoKey | Uint8Array, algorithm: string): Promise<boolean> {
  try {
    await compactVerify(token, key, { algorithms: [algorithm] });
    return true;
  } catch {
    return false;
  }
}

async function checkSignature(
  token: string,
  header: Record<string, unknown>,
  context: ValidatorContext,
): Promise<string | undefined> {
  const { faults, keys } = context;
  const { alg, kid } = header;
  if (typeof alg !== 'string') return 'the token header has no alg';
  if (alg.toLowerCase() === 'none')
    return faults.has('api-accept-alg-none') ? undefined : 'unsigned tokens (alg none) are not accepted';
  if (faults.has('api-trust-jku') && header.jku !== undefined) return undefined;
  if (alg === 'HS256' && faults.has('api-accept-hs256-public-key')) {
    const candidates = kid === undefined ? keys.keys : [keys.find(kid)].filter((key) => key !== undefined);
    for (const key of candidates) {
      if (await verifies(token, new TextEncoder().encode(key.spki), 'HS256')) return undefined;
    }
    return 'the token signature is invalid';
  }
  if (!(allowedAlgorithms as readonly string[]).includes(alg))
    return `the token algorithm ${alg} is not accepted (only ${allowedAlgorithms.join(', ')})`;
  if (faults.has('api-skip-signature-check')) return undefined;
  if (faults.has('api-trust-embedded-jwk') && typeof header.jwk === 'object' && header.jwk !== null) {
    try {
      const key = await importJWK(header.jwk as JWK, alg);
      return (await verifies(token, key as CryptoKey, alg)) ? undefined : 'the token signature is invalid';
    } catch {
      return 'the embedded jwk is not a usable key';
    }
  }
  const key = keys.find(kid);
  if (!key) return 'the token kid is not a key of the JWKS';
  // RFC 7515 §4.1.11: no extension is understood, so a crit header makes the token invalid.
  if (header.crit !== undefined) return 'the token has a crit header this server does not understand';
  // RS256 = RSASSA-PKCS1-v1_5 with SHA-256 over "header.payload" (RFC 7518 §3.3); node:crypto
  // verifies synchronously, several times faster than the WebCrypto path.
  const dot = token.lastIndexOf('.');
  try {
    const signature = Buffer.from(token.slice(dot + 1), 'base64url');
    if (verify('sha256', Buffer.from(token.slice(0, dot)), key.verifyKey, signature)) return undefined;
  } catch {
    // a signature node:crypto cannot even parse is simply invalid
  }
  return 'the token signature is invalid';
}

/**
 * Validates an access token as the partner API does: compact JWS, alg allow-list, kid from the
 * JWKS, signature, typ (rfc9068 profile), iss, aud, exp and nbf with leeway, and claim shapes.
 */
export async function validateAccessToken(
  token: string,
  context: ValidatorContext,
): Promise<AccessTokenResult> {
  const { faults } = context;
  const cache = faults.size === 0 ? context.verified : undefined;
  const cached = cache?.get(token);
  let header: Record<string, unknown>;
  let payload: Record<string, unknown>;
  if (cached !== undefined && context.keys.find(cached.kid) !== undefined) ({ header, payload } = cached);
  else {
    const parts = token.split('.');
    if (parts.length !== 3 || !parts.every((part) => b64url.test(part)) || !parts[0] || !parts[1])
      return invalid('the access token is not a compact JWS', true);
    const decodedHeader = decodeJsonObject(parts[0]);
    const decodedPayload = decodeJsonObject(parts[1]);
    if (!decodedHeader || !decodedPayload) return invalid('the access token is not a compact JWS', true);
    [header, payload] = [decodedHeader, decodedPayload];
    const signatureProblem = await checkSignature(token, header, context);
    if (signatureProblem) return invalid(signatureProblem);
    // Without faults, a good signature means a kid of the JWKS verified it.
    if (cache !== undefined && typeof header.kid === 'string')
      cache.set(token, { header, payload, kid: header.kid });
  }
  // The signature verified: a refusal from here on still says which partner the token names.
  const refuse = (description: string) => invalid(description, false, payload.partnerId);
  if (context.profile === 'rfc9068' && !faults.has('api-skip-typ-check')) {
    // RFC 9068 §4: the typ header must be at+jwt (or application/at+jwt).
    const typ = typeof header.typ === 'string' ? header.typ.toLowerCase() : '';
    if (typ !== 'at+jwt' && typ !== 'application/at+jwt') return refuse('the token typ is not at+jwt');
  }
  if (!faults.has('api-skip-issuer-check') && payload.iss !== context.issuer)
    return refuse('the token issuer is not this authentication service');
  if (!faults.has('api-skip-audience-check')) {
    const { aud } = payload;
    const audiences = typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud : [];
    const accepted = faults.has('token-wrong-audience-claim')
      ? [context.audience, wrongAudience]
      : [context.audience];
    if (!audiences.some((value) => accepted.includes(value as string)))
      return refuse('the token audience is not this API');
  }
  const now = context.clock() / 1000;
  const leeway = context.leewaySeconds;
  const { exp, nbf } = payload;
  if (!faults.has('api-ignore-expiry')) {
    if (typeof exp !== 'number' || !Number.isFinite(exp)) return refuse('the token has no numeric exp');
    if (!(now < exp + leeway)) return refuse('the access token expired');
  }
  if (nbf !== undefined && !faults.has('api-ignore-nbf')) {
    if (typeof nbf !== 'number' || !Number.isFinite(nbf)) return refuse('the token nbf is not numeric');
    if (now < nbf - leeway) return refuse('the access token is not valid yet (nbf)');
  }
  const { partnerId, client_id: clientId } = payload;
  if (typeof partnerId !== 'string') return refuse('the token has no partnerId claim');
  const scopes = payload.scope === undefined ? [] : scopesOfClaim(payload.scope);
  if (scopes === undefined) return refuse('the token scope claim is malformed');
  return {
    valid: true,
    claims: {
      partnerId,
      scopes,
      clientId: typeof clientId === 'string' ? clientId : undefined,
      ...(typeof payload.iat === 'number' && { issuedAt: payload.iat }),
      ...(typeof payload.jti === 'string' && { jti: payload.jti }),
    },
  };
}
