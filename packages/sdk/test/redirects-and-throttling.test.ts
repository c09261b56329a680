import { TokenThrottledError } from '@partner-lending/auth';
import { startMock } from '@partner-lending/mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPartnerClient, RedirectRefusedError } from '../src/index.js';
import { json, startServer, type TestServer } from './support/server.js';
import { fixedTokenProvider } from './support/token-provider.js';

// Two real servers on 127.0.0.1: the API, which redirects some paths, and another origin that records
// whatever reaches it (it must see no call, let alone a token).
let api: TestServer;
let elsewhere: TestServer;

beforeAll(async () => {
  elsewhere = await startServer((_request, response) => json(response, 200, []));
  api = await startServer((request, response) => {
    const url = new URL(request.url, 'http://x');
    if (url.pathname === '/v3/partner/partner-1/loans' && url.searchParams.get('limit') === '5') {
      response.writeHead(307, { location: '/moved/v3/partner/partner-1/loans?limit=5' });
      return response.end();
    }
    if (url.pathname.startsWith('/moved/')) {
      return json(response, 200, [{ id: 'loan-0', authorization: request.headers.authorization ?? '' }]);
    }
    if (url.pathname === '/v3/partner/partner-1/loans' && url.searchParams.get('limit') === '6') {
      response.writeHead(302, { location: `${elsewhere.url}/v3/partner/partner-1/loans?limit=6&x=secret` });
      return response.end();
    }
    if (url.pathname === '/v3/partner/partner-1/loans' && url.searchParams.get('limit') === '7') {
      response.writeHead(301, { location: '/v3/partner/partner-1/loans?limit=7' });
      return response.end();
    }
    return json(response, 404, { error: 'not_found' });
  });
});
afterAll(async () => {
  await api.close();
  await elsewhere.close();
});

const client = () =>
  createPartnerClient({
    baseUrl: api.url,
    tokenProvider: fixedTokenProvider(),
    env: {},
    sleep: async () => {},
  });

describe('redirects', () => {
  it('a redirect to the same origin is followed, with the token', async () => {
    const page = await client().loans.list({ limit: 5 });
    expect(page.items).toEqual([{ id: 'loan-0', authorization: 'Bearer token-1' }]);
    // Two requests reached the API: the redirected one and its target.
    expect(api.seen.filter((r) => r.url.includes('limit=5')).map((r) => r.url)).toEqual([
      '/v3/partner/partner-1/loans?limit=5',
      '/moved/v3/partner/partner-1/loans?limit=5',
    ]);
  });

  it('a redirect to another origin is refused, naming the target without its query; nothing reaches it', async () => {
    const before = elsewhere.seen.length;
    const error = await client()
      .loans.list({ limit: 6 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedirectRefusedError);
    expect(error).toMatchObject({
      code: 'ERR_REDIRECT',
      status: 302,
      location: `${elsewhere.url}/v3/partner/partner-1/loans`,
    });
    expect((error as Error).message).toContain(`${elsewhere.url}/v3/partner/partner-1/loans`);
    expect((error as Error).message).not.toContain('secret');
    expect(elsewhere.seen.length).toBe(before);
  });

  it('a redirect loop ends after 5 hops with an error', async () => {
    const error = await client()
      .loans.list({ limit: 7 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedirectRefusedError);
    expect((error as Error).message).toMatch(/more than 5 times/);
  });
});

describe('a throttling token endpoint, through the SDK', () => {
  it('Retry-After longer than the call deadline fails the call at once with TokenThrottledError, not a timeout', async () => {
    const mock = await startMock();
    // A token endpoint in front of the mock that answers 429 Retry-After: 600.
    const throttling = await startServer((_request, response) =>
      json(response, 429, { error: 'slow_down' }, { 'retry-after': '600' }),
    );
    try {
      const [account] = mock.clients;
      const sdk = createPartnerClient({
        env: {},
        authUrl: throttling.url,
        baseUrl: mock.baseUrl,
        clientId: account!.clientId,
        clientSecret: account!.clientSecret,
        timeoutMs: 20_000,
      });
      // Within vitest's 5-s test timeout: the 20-s deadline is not waited out.
      const error = await sdk.loans.list().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TokenThrottledError);
      expect(error).toMatchObject({ code: 'ERR_TOKEN_THROTTLED', retryAfterMs: 600_000 });
      // One token request, no retry; the next call fails fast without another.
      await expect(sdk.loans.list()).rejects.toMatchObject({ code: 'ERR_TOKEN_THROTTLED' });
      expect(throttling.seen).toHaveLength(1);
    } finally {
      await throttling.close();
      await mock.close();
    }
  });
});
