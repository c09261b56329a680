import { createPrivateKey, createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { calculateJwkThumbprint } from 'jose';
import { UsageError } from '../errors.js';
import { algorithmOf } from './dsse.js';

/** A public key of a JWKS as attestations name it: its `kid`, algorithm and key. */
export interface AttestationPublicKey {
  kid: string;
  alg: 'EdDSA' | 'ES256';
  key: KeyObject;
}

/** A JWKS (RFC 7517) of attestation keys. */
export interface Jwks {
  keys: Array<JsonWebKey & { kid?: string; alg?: string; use?: string }>;
}

/** The public JWK of a key, with its `kid` (the RFC 7638 thumbprint), `alg` and `use`. */
export async function publicJwk(
  key: KeyObject,
): Promise<JsonWebKey & { kid: string; alg: string; use: string }> {
  const publicKey = key.type === 'private' ? createPublicKey(key) : key;
  const jwk = publicKey.export({ format: 'jwk' });
  const kid = await calculateJwkThumbprint(jwk as Parameters<typeof calculateJwkThumbprint>[0]);
  return { ...jwk, kid, alg: algorithmOf(publicKey), use: 'sig' };
}

/**
 * Reads a signing key: a private JWK (JSON) or a PEM (PKCS#8 or SEC1), Ed25519 or ES256. A message
 * says what the text is and what is expected; the key's material is never repeated.
 */
export function parsePrivateKey(text: string, where: string): KeyObject {
  let key: KeyObject;
  try {
    const trimmed = text.trim();
    key = trimmed.startsWith('{')
      ? createPrivateKey({ key: JSON.parse(trimmed) as JsonWebKey, format: 'jwk' })
      : createPrivateKey(trimmed);
  } catch {
    throw new UsageError(
      `${where} is not a private key: expected a private JWK (JSON with "d") or a PEM private key, Ed25519 or ECDSA P-256`,
    );
  }
  algorithmOf(key);
  return key;
}

/** The usable keys of a JWKS: Ed25519 and P-256 signature keys with a kid; others are ignored. */
export function keysOf(jwks: unknown): AttestationPublicKey[] {
  const list = (jwks as Partial<Jwks> | null)?.keys;
  if (!Array.isArray(list)) throw new UsageError('not a JWKS: expected a JSON object with a "keys" array');
  const keys: AttestationPublicKey[] = [];
  for (const jwk of list.slice(0, 100)) {
    if (typeof jwk !== 'object' || jwk === null || typeof jwk.kid !== 'string' || 'd' in jwk) continue;
    try {
      const key = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
      keys.push({ kid: jwk.kid, alg: algorithmOf(key), key });
    } catch {
      // another kind of key: not one that signs attestations
    }
  }
  return keys;
}
