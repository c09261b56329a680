import { createHash } from 'node:crypto';

/** The Redis names of one provider cache key. */
export interface RedisNames {
  /** The hash tag's content: a digest of the provider's cache key (token URL, client, audience, scopes). */
  tag: string;
  /** Hash with the token: `{namespace}{tag}:token`. */
  token: string;
  /** The single-flight lock: `{namespace}{tag}:lock`. */
  lock: string;
  /** Set while the token endpoint asks the fleet to wait (Retry-After): `{namespace}{tag}:throttle`. */
  throttle: string;
}

/** Default namespace: every key this store writes starts with it. */
export const DEFAULT_NAMESPACE = 'partner-lending:token-store:';

/**
 * Builds the Redis keys of a provider cache key. The cache key is hashed, so that key names show no
 * token URL, audience or scope, and so that no `{`/`}` in it can break the hash tag. The tag puts the
 * token and its lock on one Redis Cluster slot: the scripts that touch both stay valid in a cluster.
 */
export function redisNames(namespace: string, cacheKey: string): RedisNames {
  const tag = createHash('sha256').update(cacheKey).digest('hex').slice(0, 32);
  return {
    tag,
    token: `${namespace}{${tag}}:token`,
    lock: `${namespace}{${tag}}:lock`,
    throttle: `${namespace}{${tag}}:throttle`,
  };
}

/** The pub/sub channel on which lock holders announce a finished token request. */
export function noticeChannel(namespace: string): string {
  return `${namespace}notice`;
}

/**
 * The Redis Cluster slot of a key: CRC16 (XMODEM) of its hash tag (the part between the first `{` and
 * the next `}`, when not empty), modulo 16384 — as Redis computes it.
 */
export function clusterSlot(key: string): number {
  const open = key.indexOf('{');
  const close = open === -1 ? -1 : key.indexOf('}', open + 1);
  const hashed = close > open + 1 ? key.slice(open + 1, close) : key;
  let crc = 0;
  for (const byte of Buffer.from(hashed, 'utf8')) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}
