// What the Cluster and Sentinel test files share: the servers' lifecycle (Redis set-up, two token
// servers, the clients a test connected, closed in that order), a provider on a store, and the fleet
// failover test with its assertions.
import { randomBytes } from 'node:crypto';
import { createTokenProvider, type TokenStore } from '@partner-lending/auth';
import { afterAll, beforeAll, expect } from 'vitest';
import { describeFailover, type FailoverJob, type FailoverOutcome, runFailover } from './failover-fleet.mjs';
import { sleep } from './loop-fleet.js';
import { CLIENT_ID, CLIENT_SECRET, startTokenServer, type TokenServer } from './token-server.mjs';

export interface TopologyFixture<S> {
  readonly servers: S;
  /** Tokens of the default lifetime, the token endpoint answering in 150 ms. */
  readonly tokens: TokenServer;
  /** 2-s tokens for the fleet, as the partners run them. */
  readonly shortTokens: TokenServer;
  readonly encryptionKey: string;
  /** Closes `client` after the file (bounded: a client that still knows a killed node may hang). */
  track<C extends { close(): Promise<unknown>; destroy(): void; readonly isOpen: boolean }>(client: C): C;
  /** A provider (cold memory, as a new process) on `store`, against `tokens`. */
  providerOn(store: TokenStore): ReturnType<typeof createTokenProvider>;
}

/** Starts the Redis set-up and the token servers before the file's tests, stops them after. */
export function topologyFixture<S extends { stop(): Promise<void> }>(
  start: () => Promise<S>,
): TopologyFixture<S> {
  let servers: S | undefined;
  let tokens: TokenServer | undefined;
  let shortTokens: TokenServer | undefined;
  const clients: { close(): Promise<unknown>; destroy(): void; readonly isOpen: boolean }[] = [];
  const encryptionKey = randomBytes(32).toString('base64');
  beforeAll(async () => {
    servers = await start();
    tokens = await startTokenServer({ delayMs: 150 });
    shortTokens = await startTokenServer({ ttlSeconds: 2, delayMs: 50 });
  }, 90_000);
  afterAll(async () => {
    for (const c of clients) {
      await Promise.race([c.close().catch(() => {}), sleep(2_000)]);
      if (c.isOpen) c.destroy();
    }
    await tokens?.close();
    await shortTokens?.close();
    await servers?.stop();
  });
  const fixture: TopologyFixture<S> = {
    get servers() {
      if (!servers) throw new Error('the Redis set-up is not started (beforeAll failed?)');
      return servers;
    },
    get tokens() {
      if (!tokens) throw new Error('the token server is not started');
      return tokens;
    },
    get shortTokens() {
      if (!shortTokens) throw new Error('the token server is not started');
      return shortTokens;
    },
    encryptionKey,
    track(client) {
      clients.push(client);
      return client;
    },
    providerOn: (store) =>
      createTokenProvider({
        tokenUrl: fixture.tokens.tokenUrl,
        clientId: CLIENT_ID,
        clientSecret: CLIENT_SECRET,
        audience: fixture.tokens.audience,
        dangerouslyAllowInsecureHttp: true,
        store,
      }),
  };
  return fixture;
}

/**
 * A fleet (4 processes × 5 callers, 2-s tokens, half without an 'error' listener of their own) through
 * one failover, the primary holding the token SIGKILLed 3.5 s in and a fifth process starting cold
 * 0.5 s after: no crash, 0 expired, 0 foreign, no call over its 3-s deadline or failed, every process
 * back on Redis, within a bound generous for a loaded machine (the bench gives the real figures).
 */
export async function expectFleetThroughFailover<S>(
  fixture: TopologyFixture<S>,
  setup: {
    job: Pick<FailoverJob, 'topology' | 'rootNodes' | 'sentinelRootNodes' | 'name' | 'follow'>;
    kill: () => Promise<number>;
    primary: () => Promise<number>;
    /** Negative controls: the same client with a subscription, no store and no listener. */
    controls?: number;
  },
): Promise<FailoverOutcome> {
  const { shortTokens, encryptionKey } = fixture;
  const outcome = await runFailover({
    job: {
      ...setup.job,
      tokenUrl: shortTokens.tokenUrl,
      audience: shortTokens.audience,
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      encryptionKey,
      durationMs: 11_000,
      timeoutMs: 3_000,
      callers: 5,
    },
    processes: 4,
    // Half the processes add no 'error' listener of their own: the store's keeps them alive.
    listeners: (i) => i % 2 === 0,
    ...(setup.controls ? { controls: setup.controls } : {}),
    tokens: shortTokens,
    killAtMs: 3_500,
    coldAtMs: 500,
    kill: setup.kill,
    primary: setup.primary,
  });
  console.log(describeFailover(setup.job.topology, outcome));
  if (setup.controls) expect(outcome.controlsDied, outcome.controlOutput.join('\n')).toBe(setup.controls);
  expect(outcome.crashes).toEqual([]);
  expect(outcome.results).toHaveLength(4);
  // The cold process started during the failover and got its tokens as well.
  expect(outcome.cold?.calls).toBeGreaterThan(10);
  expect(Number.isFinite(outcome.promotedAt)).toBe(true);
  expect(outcome.calls).toBeGreaterThan(100);
  expect(outcome.expired).toBe(0);
  expect(outcome.foreign).toBe(0);
  expect(outcome.overDeadline).toBe(0);
  expect(outcome.failed).toBe(0);
  expect(outcome.neverBack).toBe(0);
  // Within a second on a quiet machine (the bench's figure); bounded generously for a loaded one.
  for (const ms of outcome.backAfterPromotionMs) expect(ms).toBeLessThan(4_000);
  return outcome;
}
