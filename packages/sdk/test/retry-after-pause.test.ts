import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPartnerClient, RateLimitError } from '../src/index.js';
import { json, recordingSleep, startServer, type TestServer } from './support/server.js';
import { fixedTokenProvider } from './support/token-provider.js';

// A real API on 127.0.0.1 whose create answers 503 with Retry-After: 2, and whose loans answer 200.
let api: TestServer;
beforeAll(async () => {
  api = await startServer((request, response) => {
    if (request.method === 'POST')
      return json(response, 503, { error: 'unavailable' }, { 'retry-after': '2' });
    return json(response, 200, []);
  });
});
afterAll(() => api.close());

describe('a Retry-After holds every call of the client, not only the one that got it (RFC 6585 §4)', () => {
  it('after a 503 with Retry-After on a create, the next list waits the time given before it is sent', async () => {
    const { delays, sleep } = recordingSleep();
    let now = 1_000_000;
    const client = createPartnerClient({
      baseUrl: api.url,
      tokenProvider: fixedTokenProvider(),
      env: {},
      sleep: async (ms, signal) => {
        await sleep(ms, signal);
        now += ms;
      },
      clock: { now: () => now },
    });
    await expect(client.loanDrafts.create({ amount: 1 })).rejects.toMatchObject({ status: 503 });
    const before = api.seen.length;
    await client.loans.list({ limit: 1 });
    expect(delays).toEqual([2000]);
    expect(api.seen.length).toBe(before + 1);
    // The pause is over: the next call goes at once.
    await client.loans.list({ limit: 1 });
    expect(delays).toEqual([2000]);
  });

  it('a call whose timeout ends before the pause fails at once with RateLimitError, sending nothing', async () => {
    const client = createPartnerClient({ baseUrl: api.url, tokenProvider: fixedTokenProvider(), env: {} });
    await expect(client.loanDrafts.create({ amount: 1 })).rejects.toMatchObject({ status: 503 });
    const before = api.seen.length;
    const error = await client.loans.list({ limit: 1 }, { timeoutMs: 500 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as RateLimitError).retryAfterMs).toBeGreaterThan(1000);
    expect((error as Error).message).toMatch(/asked this client to wait \d+ ms more/);
    expect(api.seen.length).toBe(before);
  });

  it('a client that never got a Retry-After waits for nothing (negative control)', async () => {
    const { delays, sleep } = recordingSleep();
    const client = createPartnerClient({
      baseUrl: api.url,
      tokenProvider: fixedTokenProvider(),
      env: {},
      sleep,
    });
    await client.loans.list({ limit: 1 });
    await client.loans.list({ limit: 1 });
    expect(delays).toEqual([]);
  });
});
