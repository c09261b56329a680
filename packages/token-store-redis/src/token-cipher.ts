import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { StoredToken } from '@partner-lending/auth';
import { RedisTokenStoreError } from './errors.js';

/** An encryption key as configured: 32 bytes, or a string of them in base64 (url-safe or not) or hex. */
export type EncryptionKeyInput = string | Uint8Array;

/** Why a stored entry could not be used. None of these is ever served: the entry counts as a miss. */
export type UnreadableReason =
  /** The ciphertext, its authentication tag or a field bound to it was modified. */
  | 'tampered'
  /** Encrypted with a key this process does not have (another fleet's key, or a rotated-out one). */
  | 'wrong-key'
  /** Stored in clear although this store has a key: never trusted (anyone who can write to Redis could plant it). */
  | 'not-encrypted'
  /** Encrypted, but this store has no key. */
  | 'no-key'
  /** Not an entry of this store (fields missing, not a token). */
  | 'malformed';

/** The Redis hash of one token: `v` payload, `k` key id (`none` in clear), `e` expiresAt, `o` obtainedAt. */
export interface EntryFields {
  v: string;
  k: string;
  e: string;
  o: string;
}

const PLAIN = 'none';
const IV_BYTES = 12;
const TAG_BYTES = 16;

interface Key {
  id: string;
  bytes: Buffer;
}

/** Decodes one key, or throws ERR_INVALID_ENCRYPTION_KEY naming where it came from (never its value). */
export function parseKey(input: EncryptionKeyInput, from: string): Buffer {
  let bytes: Buffer | undefined;
  if (typeof input === 'string') {
    const text = input.trim();
    if (/^[0-9a-fA-F]{64}$/.test(text)) bytes = Buffer.from(text, 'hex');
    else if (/^[A-Za-z0-9+/]{43}=?$/.test(text)) bytes = Buffer.from(text, 'base64');
    else if (/^[A-Za-z0-9_-]{43}$/.test(text)) bytes = Buffer.from(text, 'base64url');
  } else if (input instanceof Uint8Array && input.byteLength === 32) {
    bytes = Buffer.from(input);
  }
  if (bytes?.byteLength !== 32) {
    const length = typeof input === 'string' ? `${input.trim().length} characters` : 'not 32 bytes';
    throw new RedisTokenStoreError(
      'ERR_INVALID_ENCRYPTION_KEY',
      `${from} is not an AES-256 key (${length}); expected 32 random bytes as 44 base64 characters or 64 hex characters: generate one with \`openssl rand -base64 32\`.`,
    );
  }
  return bytes;
}

/** A short, one-way identifier of a key, stored beside each entry so a reader knows which key to use. */
function keyId(bytes: Buffer): string {
  return createHash('sha256')
    .update('partner-lending token-store key id\0')
    .update(bytes)
    .digest('hex')
    .slice(0, 16);
}

function isStoredToken(value: unknown): value is StoredToken {
  if (typeof value !== 'object' || value === null) return false;
  const t = value as Record<string, unknown>;
  return (
    typeof t.accessToken === 'string' &&
    t.accessToken !== '' &&
    t.tokenType === 'Bearer' &&
    typeof t.expiresAt === 'number' &&
    Number.isFinite(t.expiresAt) &&
    typeof t.obtainedAt === 'number' &&
    Number.isFinite(t.obtainedAt) &&
    Array.isArray(t.grantedScopes) &&
    t.grantedScopes.every((s) => typeof s === 'string') &&
    typeof t.partnerId === 'string' &&
    typeof t.issuer === 'string' &&
    typeof t.jti === 'string'
  );
}

export type OpenResult = { token: StoredToken } | { unreadable: UnreadableReason };

/**
 * Seals tokens with AES-256-GCM. The additional authenticated data binds each ciphertext to its Redis
 * key and to the expiry fields stored in clear beside it (the write script compares those), so a
 * ciphertext moved to another key, or an edited expiry, fails authentication like an edited byte.
 */
export class TokenCipher {
  readonly #keys: Key[];

  /** `keys[0]` encrypts; every key decrypts (rotation: put the new key first, keep the old one a while). */
  constructor(keys: readonly Buffer[]) {
    this.#keys = keys.map((bytes) => ({ id: keyId(bytes), bytes }));
  }

  get encrypted(): boolean {
    return this.#keys.length > 0;
  }

  #aad(redisKey: string, k: string, e: string, o: string): Buffer {
    return Buffer.from(`partner-lending-token-store:v1|${redisKey}|${k}|${e}|${o}`);
  }

  seal(redisKey: string, token: StoredToken): EntryFields {
    const e = String(token.expiresAt);
    const o = String(token.obtainedAt);
    const json = JSON.stringify(token);
    const key = this.#keys[0];
    if (key === undefined) return { v: json, k: PLAIN, e, o };
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key.bytes, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(this.#aad(redisKey, key.id, e, o));
    const body = Buffer.concat([cipher.update(json, 'utf8'), cipher.final()]);
    const v = Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64');
    return { v, k: key.id, e, o };
  }

  open(redisKey: string, fields: Partial<EntryFields>): OpenResult {
    const { v, k, e, o } = fields;
    if (!v || !k || !e || !o) return { unreadable: 'malformed' };
    let json: string;
    if (k === PLAIN) {
      if (this.encrypted) return { unreadable: 'not-encrypted' };
      json = v;
    } else {
      if (!this.encrypted) return { unreadable: 'no-key' };
      const key = this.#keys.find((candidate) => candidate.id === k);
      if (key === undefined) return { unreadable: 'wrong-key' };
      const raw = Buffer.from(v, 'base64');
      if (raw.byteLength < IV_BYTES + TAG_BYTES + 1) return { unreadable: 'tampered' };
      try {
        const decipher = createDecipheriv('aes-256-gcm', key.bytes, raw.subarray(0, IV_BYTES), {
          authTagLength: TAG_BYTES,
        });
        decipher.setAAD(this.#aad(redisKey, k, e, o));
        decipher.setAuthTag(raw.subarray(raw.byteLength - TAG_BYTES));
        json = Buffer.concat([
          decipher.update(raw.subarray(IV_BYTES, raw.byteLength - TAG_BYTES)),
          decipher.final(),
        ]).toString('utf8');
      } catch {
        return { unreadable: 'tampered' };
      }
    }
    let token: unknown;
    try {
      token = JSON.parse(json);
    } catch {
      return { unreadable: 'malformed' };
    }
    if (!isStoredToken(token)) return { unreadable: 'malformed' };
    // In clear, nothing authenticates the copy of the expiry the write script compares: check it here.
    if (String(token.expiresAt) !== e || String(token.obtainedAt) !== o) return { unreadable: 'tampered' };
    return { token };
  }
}
