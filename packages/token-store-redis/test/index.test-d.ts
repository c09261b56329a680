import type { TokenStore } from '@partner-lending/auth';
import { createCluster, createSentinel } from 'redis';
import { describe, expectTypeOf, it } from 'vitest';
import {
  createRedisTokenStore,
  type RedisClient,
  type RedisTokenStore,
  RedisTokenStoreError,
  type RedisTokenStoreErrorCode,
  type RedisTokenStoreEvent,
} from '../src/index.js';

declare const client: RedisClient;

describe('public types', () => {
  it('the store is a TokenStore whose singleFlight is always there', () => {
    const store = createRedisTokenStore({ url: process.env.REDIS_URL });
    expectTypeOf(store).toExtend<TokenStore>();
    expectTypeOf<RedisTokenStore['singleFlight']>().toBeFunction();
    expectTypeOf<NonNullable<TokenStore['singleFlight']>>().toEqualTypeOf<RedisTokenStore['singleFlight']>();
    expectTypeOf(store.close).returns.toEqualTypeOf<Promise<void>>();
  });

  it('takes a url or a client (single node, cluster or sentinel), not both and not neither', () => {
    createRedisTokenStore({ client });
    createRedisTokenStore({ client: createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:7000' }] }) });
    createRedisTokenStore({
      client: createSentinel({ name: 'primary', sentinelRootNodes: [{ host: '127.0.0.1', port: 26379 }] }),
    });
    // The README's Sentinel snippet: the object given to createSentinel, given to the store as well.
    const sentinelOptions = {
      name: 'primary',
      sentinelRootNodes: [{ host: '127.0.0.1', port: 26379 }],
      nodeClientOptions: { password: 'secret', socket: { reconnectStrategy: (n: number) => n * 50 } },
      sentinelClientOptions: { socket: { reconnectStrategy: (n: number) => n * 50 } },
    };
    createRedisTokenStore({ client: createSentinel(sentinelOptions), sentinel: sentinelOptions });
    createRedisTokenStore({ client: createSentinel(sentinelOptions), sentinel: false });
    // @ts-expect-error -- sentinelRootNodes are nodes, not URLs
    createRedisTokenStore({ client, sentinel: { sentinelRootNodes: ['redis://127.0.0.1:26379'] } });
    // @ts-expect-error -- not a node-redis client
    createRedisTokenStore({ client: { sendCommand: () => Promise.resolve() } });
    // @ts-expect-error -- url and client exclude each other
    createRedisTokenStore({ url: 'redis://127.0.0.1', client });
    // @ts-expect-error -- one of them is needed
    createRedisTokenStore({ namespace: 'x:' });
  });

  it('errors carry a code from one union; events are a discriminated union', () => {
    expectTypeOf<RedisTokenStoreError['code']>().toEqualTypeOf<RedisTokenStoreErrorCode>();
    // @ts-expect-error -- not a code of this package
    const wrong: RedisTokenStoreErrorCode = 'ERR_TOKEN_REQUEST';
    void wrong;
    expectTypeOf<Extract<RedisTokenStoreEvent, { type: 'token-unreadable' }>['reason']>().toEqualTypeOf<
      'tampered' | 'wrong-key' | 'not-encrypted' | 'no-key' | 'malformed'
    >();
    expectTypeOf(new RedisTokenStoreError('ERR_STORE_CLOSED', 'closed')).toExtend<Error>();
  });
});
