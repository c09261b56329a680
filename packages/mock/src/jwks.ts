import { KeyObject } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, exportSPKI, generateKeyPair, type JWK } from 'jose';

export interface SigningKey {
  readonly kid: string;
  readonly privateKey: CryptoKey;
  readonly publicKey: CryptoKey;
  /** The public key as a node:crypto KeyObject, for fast synchronous verification. */
  readonly verifyKey: KeyObject;
  readonly jwk: JWK;
  /** SPKI PEM text of the public key (only used by the api-accept-hs256-public-key fault). */
  readonly spki: string;
}

/** An RS256 key pair, as jose's generateKeyPair('RS256') gives. */
export interface RsaKeyPair {
  readonly privateKey: CryptoKey;
  readonly publicKey: CryptoKey;
}

async function createKey(pair?: RsaKeyPair): Promise<SigningKey> {
  const { privateKey, publicKey } = pair ?? (await generateKeyPair('RS256', { modulusLength: 2048 }));
  const publicJwk = await exportJWK(publicKey);
  // The kid is the key's RFC 7638 thumbprint: every mock given the same pair (instances of one hosted
  // stage) names it alike, so a token one of them issued verifies on the others.
  const kid = await calculateJwkThumbprint(publicJwk, 'sha256');
  const jwk = { ...publicJwk, kid, alg: 'RS256', use: 'sig' };
  const verifyKey = KeyObject.from(publicKey);
  return { kid, privateKey, publicKey, verifyKey, jwk, spki: await exportSPKI(publicKey) };
}

/**
 * The key set of the auth server. One key signs; the JWKS publishes the signing key and, after a
 * rotation, the previous one (so tokens it signed stay valid until the next rotation retires it).
 */
export class KeySet {
  #keys: SigningKey[];

  private constructor(keys: SigningKey[]) {
    this.#keys = keys;
  }

  static async create(pair?: RsaKeyPair): Promise<KeySet> {
    return new KeySet([await createKey(pair)]);
  }

  /** The key that signs new tokens. */
  get signing(): SigningKey {
    return this.#keys[0]!;
  }

  /** Every published (verifying) key, signing key first. */
  get keys(): readonly SigningKey[] {
    return this.#keys;
  }

  find(kid: unknown): SigningKey | undefined {
    return typeof kid === 'string' ? this.#keys.find((key) => key.kid === kid) : undefined;
  }

  /**
   * Adds a new signing key. The previous signing key stays published for verification; any older
   * key is retired. With `retirePrevious`, only the new key remains.
   */
  async rotate(options: { retirePrevious?: boolean } = {}): Promise<void> {
    const next = await createKey();
    this.#keys = options.retirePrevious ? [next] : [next, this.signing];
  }

  jwks(): { keys: JWK[] } {
    return { keys: this.#keys.map((key) => key.jwk) };
  }
}
