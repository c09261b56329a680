export { RedisTokenStoreError, type RedisTokenStoreErrorCode } from './errors.js';
export { DEFAULT_NAMESPACE } from './redis-keys.js';
export {
  createRedisTokenStore,
  type RedisClient,
  type RedisCluster,
  type RedisConnection,
  type RedisOperation,
  type RedisSentinel,
  type RedisTokenStore,
  type RedisTokenStoreEvent,
  type RedisTokenStoreOptions,
  type RedisTokenStoreSettings,
  type SentinelFollowOptions,
} from './redis-token-store.js';
export type { EncryptionKeyInput, UnreadableReason } from './token-cipher.js';
