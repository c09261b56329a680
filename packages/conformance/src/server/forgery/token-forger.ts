import { randomUUID } from 'node:crypto';
import { type CryptoKey, exportJWK, exportSPKI, generateKeyPair, importJWK, type JWK, SignJWT } from 'jose';
import { base64url, type DecodedJwt, decodeJwt } from '../../common/jwt.js';
import { ConformanceError } from '../../errors.js';

/**
 * Single-fault tokens (RFC 8725 §2–3, RFC 9068 §4): each is derived from a valid token and differs from
 * it in exactly one way that a resource server must notice.
 */

/** The casings of `none` tried: a server comparing case-sensitively would still refuse `none`. */
export const noneCasings = ['none', 'None', 'NONE', 'nOnE'] as const;

function requireJwt(token: string): DecodedJwt {
  const decoded = decodeJwt(token);
  if (!decoded)
    throw new ConformanceError(
      'ERR_TOKEN_NOT_JWS',
      'the access token is not a compact JWS (header.payload.signature)',
    );
  return decoded;
}

/** The same claims, unsigned, with `alg` set to the given casing of "none" (RFC 8725 §2.1). */
export function algNoneToken(token: string, casing: string): string {
  const { header, parts } = requireJwt(token);
  const { kid: _kid, ...rest } = header;
  return `${base64url(JSON.stringify({ ...rest, alg: casing }))}.${parts[1]}.`;
}

/**
 * The same claims with one claim changed and the original signature kept: here the scope claim widened
 * to `scopes` in the claim's own shape (string or array), a privilege escalation the signature must stop.
 */
export function tamperedPayloadToken(token: string, scopes: readonly string[]): string {
  const { payload, parts } = requireJwt(token);
  const scope = Array.isArray(payload.scope) ? [...scopes] : scopes.join(' ');
  const changed = { ...payload, scope, partnerId: payload.partnerId, conformance: 'tampered' };
  return `${parts[0]}.${base64url(JSON.stringify(changed))}.${parts[2]}`;
}

/**
 * The same claims signed HS256 with the PEM text (SPKI) of the server's public key as the HMAC secret:
 * the algorithm-confusion attack (RFC 8725 §2.1, §3.1). One token per JWKS key.
 */
export async function hs256PublicKeyTokens(token: string, jwks: { keys: readonly JWK[] }): Promise<string[]> {
  const { header, payload } = requireJwt(token);
  const keys = jwks.keys.filter((key) => key.kty === 'RSA' || key.kty === 'EC' || key.kty === 'OKP');
  const named = keys.filter((key) => key.kid !== undefined && key.kid === header.kid);
  const out: string[] = [];
  for (const jwk of named.length > 0 ? named : keys) {
    const alg = jwk.alg ?? (jwk.kty === 'RSA' ? 'RS256' : jwk.kty === 'EC' ? 'ES256' : 'EdDSA');
    const key = await importJWK({ ...jwk, ext: true }, alg, { extractable: true });
    if (key instanceof Uint8Array) continue;
    const pem = await exportSPKI(key);
    const protectedHeader: Record<string, unknown> = { ...header, alg: 'HS256' };
    if (jwk.kid !== undefined) protectedHeader.kid = jwk.kid;
    else delete protectedHeader.kid;
    out.push(
      await new SignJWT(payload)
        .setProtectedHeader(protectedHeader as { alg: string })
        .sign(new TextEncoder().encode(pem)),
    );
  }
  return out;
}

interface AttackerKey {
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
  readonly kid: string;
}

const attackerKeys = new Map<string, Promise<AttackerKey>>();

/** A key pair of the attacker for `alg`, made once per process (RSA key generation is slow). */
function attackerKey(alg: string): Promise<AttackerKey> {
  let key = attackerKeys.get(alg);
  if (!key) {
    key = (async () => {
      const pair = await generateKeyPair(alg, { extractable: true });
      const kid = `conformance-unknown-${randomUUID()}`;
      return { privateKey: pair.privateKey, publicJwk: await exportJWK(pair.publicKey), kid };
    })();
    attackerKeys.set(alg, key);
  }
  return key;
}

function signingAlg(header: Record<string, unknown>): string {
  const alg = header.alg;
  return typeof alg === 'string' && /^(RS|PS|ES)(256|384|512)$|^EdDSA$/.test(alg) ? alg : 'RS256';
}

type HeaderChange = (header: Record<string, unknown>, key: AttackerKey) => Record<string, unknown>;

async function signWithAttackerKey(token: string, change: HeaderChange): Promise<string> {
  const { header, payload } = requireJwt(token);
  const alg = signingAlg(header);
  const key = await attackerKey(alg);
  const { kid: _kid, jwk: _jwk, jku: _jku, x5u: _x5u, x5c: _x5c, ...rest } = header;
  const protectedHeader = change({ ...rest, alg }, key);
  return new SignJWT(payload).setProtectedHeader(protectedHeader as { alg: string }).sign(key.privateKey);
}

/** The same claims signed by a key the server never published, named by an unknown `kid`. */
export function unknownKeyToken(token: string): Promise<string> {
  return signWithAttackerKey(token, (header, key) => ({ ...header, kid: key.kid }));
}

/** The same claims signed by the attacker, whose public key rides along in the `jwk` header (RFC 7515 §4.1.3). */
export function embeddedJwkToken(token: string): Promise<string> {
  return signWithAttackerKey(token, (header, key) => ({ ...header, jwk: key.publicJwk }));
}
