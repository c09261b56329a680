import type { StoredToken } from '@partner-lending/auth';
import type { Connection } from './connection.js';
import type { Emit, RedisOperation, RedisTokenStoreSettings } from './options.js';
import type { RedisNames } from './redis-keys.js';
import { dropScript, writeScript } from './scripts.js';
import { type EncryptionKeyInput, type EntryFields, parseKey, TokenCipher } from './token-cipher.js';

let warnedUnencrypted = false;

/**
 * The cipher of a store: the keys of `encryptionKey`, else of PARTNER_TOKEN_STORE_KEY; without either,
 * tokens are stored in clear, said once per process (a warning) and once per store (an event).
 */
export function cipherOf(encryptionKey: RedisTokenStoreSettings['encryptionKey'], emit: Emit): TokenCipher {
  const configured = encryptionKey ?? process.env.PARTNER_TOKEN_STORE_KEY;
  const keyList = (
    configured === undefined || configured === '' ? [] : [configured]
  ).flat() as EncryptionKeyInput[];
  const from = encryptionKey === undefined ? 'PARTNER_TOKEN_STORE_KEY' : 'encryptionKey';
  const cipher = new TokenCipher(
    keyList.map((key, index) => parseKey(key, keyList.length > 1 ? `${from}[${index}]` : from)),
  );
  if (!cipher.encrypted) {
    if (!warnedUnencrypted) {
      warnedUnencrypted = true;
      process.emitWarning(
        'no PARTNER_TOKEN_STORE_KEY or encryptionKey: access tokens are stored in Redis in clear, readable by anyone who can read Redis or its backups, and tokens written by anyone who can write to Redis are trusted. Set a 32-byte key (`openssl rand -base64 32`).',
        { code: 'PARTNER_TOKEN_STORE_UNENCRYPTED' },
      );
    }
    emit({ type: 'encryption-disabled' });
  }
  return cipher;
}

/** Token entries in Redis: a hash per key, sealed by the cipher, written only when newer (a script). */
export class Entries {
  readonly #redis: Connection;
  readonly #cipher: TokenCipher;
  readonly #emit: Emit;
  readonly #channel: string;

  constructor(redis: Connection, cipher: TokenCipher, emit: Emit, channel: string) {
    this.#redis = redis;
    this.#cipher = cipher;
    this.#emit = emit;
    this.#channel = channel;
  }

  async read(operation: RedisOperation, names: RedisNames): Promise<StoredToken | undefined> {
    const [v, k, e, o] = await this.#redis.send<(string | null)[]>(operation, [
      'HMGET',
      names.token,
      'v',
      'k',
      'e',
      'o',
    ]);
    if (v == null && k == null) return undefined;
    const fields: Partial<EntryFields> = {};
    if (v != null) fields.v = v;
    if (k != null) fields.k = k;
    if (e != null) fields.e = e;
    if (o != null) fields.o = o;
    const opened = this.#cipher.open(names.token, fields);
    // The key's own expiry is set from the token's, but Redis's clock is not ours: a token past its
    // expiry on this machine's clock is a miss, whatever the key's TTL says.
    if ('token' in opened) return opened.token.expiresAt > Date.now() ? opened.token : undefined;
    this.#emit({ type: 'token-unreadable', tag: names.tag, reason: opened.unreadable });
    // A damaged entry would otherwise stand until it expires (and could block newer writes): drop it,
    // unless it is merely sealed with a key this process lacks (another set-up's token).
    if ((opened.unreadable === 'tampered' || opened.unreadable === 'malformed') && v != null) {
      await this.#redis.evaluate(operation, dropScript, [names.token], [v]).catch(() => {});
    }
    return undefined;
  }

  /**
   * Writes `token` unless a newer one is stored; with `release`, frees the lock and publishes the notice
   * too. The key expires at `expireAt` (epoch ms, never later than the token's own expiry), an absolute
   * time: however long the write waits to be executed, it does not outlive the token.
   */
  async write(
    operation: RedisOperation,
    names: RedisNames,
    token: StoredToken,
    expireAt: number,
    release?: { lockId: string; message: string },
  ): Promise<void> {
    const { v, k, e, o } = this.#cipher.seal(names.token, token);
    const written = await this.#redis.evaluate<number>(
      operation,
      writeScript,
      [names.token, names.lock],
      [
        v,
        k,
        e,
        o,
        String(Math.floor(Math.min(expireAt, token.expiresAt))),
        release?.lockId ?? '',
        release ? this.#channel : '',
        release?.message ?? '',
      ],
    );
    if (written === 0) this.#emit({ type: 'write-skipped', tag: names.tag });
  }
}
