/**
 * Stable codes of {@link RedisTokenStoreError}: callers switch on these (the wording of messages may
 * improve; the codes do not change).
 */
export type RedisTokenStoreErrorCode =
  /** Redis cannot be reached right now (not connected, connection lost, or a command timed out). */
  | 'ERR_REDIS_UNAVAILABLE'
  /** Redis answered a command with an error (a permission, a read-only replica, a wrong key type…). */
  | 'ERR_REDIS_COMMAND'
  /** Redis refused the credentials (WRONGPASS, NOAUTH): the user or password of the URL or client is wrong. */
  | 'ERR_REDIS_AUTH'
  /** Another process held the lock and no token arrived within `timeoutMs`. */
  | 'ERR_SINGLE_FLIGHT_TIMEOUT'
  /** The process holding the lock reported that its token request failed (its code is `remoteCode`). */
  | 'ERR_REMOTE_FETCH_FAILED'
  /**
   * The token endpoint told a process of the fleet to retry later (429/503 Retry-After): until
   * `throttledUntil`, no process sends a token request for this key.
   */
  | 'ERR_REMOTE_THROTTLED'
  /** The encryption key (option or `PARTNER_TOKEN_STORE_KEY`) is not 32 bytes in base64 or hex. */
  | 'ERR_INVALID_ENCRYPTION_KEY'
  /** `close()` was called; the store takes no more calls. */
  | 'ERR_STORE_CLOSED'
  /**
   * An option of `createRedisTokenStore` is invalid (neither or both of `url` and `client`, a namespace
   * with `{` or `}`, a timeout that is not a number > 0): thrown by `createRedisTokenStore`, before any
   * connection. The message names the option and what it takes.
   */
  | 'ERR_INVALID_OPTION';

/**
 * The one error class of this package, with a stable string `code` and the original `cause` kept.
 * No error ever carries an access token or the encryption key.
 */
export class RedisTokenStoreError extends Error {
  readonly code: RedisTokenStoreErrorCode;
  /** For `ERR_REMOTE_FETCH_FAILED`: the `code` of the error the lock holder's token request threw. */
  readonly remoteCode: string | undefined;
  /**
   * For `ERR_REMOTE_THROTTLED`: epoch ms (this process's clock) until which the token endpoint asked
   * the fleet to wait. The token provider fails fast with TokenThrottledError until then.
   */
  readonly throttledUntil: number | undefined;

  constructor(
    code: RedisTokenStoreErrorCode,
    message: string,
    options?: { cause?: unknown; remoteCode?: string; throttledUntil?: number },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'RedisTokenStoreError';
    this.code = code;
    this.remoteCode = options?.remoteCode;
    this.throttledUntil = options?.throttledUntil;
  }
}
