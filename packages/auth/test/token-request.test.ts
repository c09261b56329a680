import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TokenNetworkError, TokenRequestError, TokenThrottledError } from '../src/errors.js';
import type { TokenEvent } from '../src/token-event.js';
import { buildTokenRequest } from '../src/token-request.js';
import { providerFor } from './support/provider.js';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  fakeClock,
  recordingSleep,
  startTokenServer,
  type TokenServer,
} from './support/token-server.js';

let server: TokenServer;
beforeAll(async () => {
  server = await startTokenServer();
});
afterAll(() => server.close());
afterEach(() => {
  server.requests.length = 0;
});

describe('the token request (API documentation §4.1)', () => {
  it('POSTs a form with grant_type, sorted deduplicated scope, audience and the credentials in the body', async () => {
    await providerFor(server).getToken({ scopes: ['read:loans', 'create:repayment', 'read:loans'] });
    const [request] = server.requests;
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe('/oauth/token');
    expect(request?.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(request?.headers.accept).toBe('application/json');
    expect(request?.headers.authorization).toBeUndefined();
    expect([...(request?.form ?? [])]).toEqual([
      ['grant_type', 'client_credentials'],
      ['scope', 'create:repayment read:loans'],
      ['audience', server.audience],
      ['client_id', CLIENT_ID],
      ['client_secret', CLIENT_SECRET],
    ]);
  });

  it('sends no scope field when no scope is wanted (the server grants every authorised scope)', async () => {
    await providerFor(server).getToken();
    expect(server.requests[0]?.form.has('scope')).toBe(false);
  });

  it("authenticates with HTTP Basic (form-encoded id and secret) when clientAuth is 'basic'", async () => {
    const request = buildTokenRequest({
      tokenUrl: new URL('https://auth.example/oauth/token'),
      clientId: 'id with space',
      clientSecret: 'p@ss:wörd+/',
      audience: 'https://api.example',
      scopes: [],
      clientAuth: 'basic',
    });
    expect(request.headers.get('authorization')).toBe(
      `Basic ${Buffer.from('id+with+space:p%40ss%3Aw%C3%B6rd%2B%2F').toString('base64')}`,
    );
    const body = new URLSearchParams(await request.text());
    expect(body.has('client_id')).toBe(false);
    expect(body.has('client_secret')).toBe(false);
    expect(request.redirect).toBe('manual');

    await providerFor(server, { clientAuth: 'basic' }).getToken();
    expect(server.requests[0]?.headers.authorization).toMatch(/^Basic /);
    expect(server.requests[0]?.form.has('client_secret')).toBe(false);
  });

  it('does not follow a redirect (it would re-send the credentials)', async () => {
    server.next(() => ({ status: 307, headers: { location: server.tokenUrl } }));
    const error = await providerFor(server)
      .getToken()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenRequestError);
    expect((error as Error).message).toBe(
      `the token endpoint ${server.tokenUrl} answered 307 redirecting to ${server.tokenUrl}; redirects are not followed because they would re-send the client credentials: set authUrl/tokenUrl to the final address.`,
    );
    expect(server.requests).toHaveLength(1);
  });
});

describe('errors that are not retried', () => {
  it.each([
    [400, 'invalid_scope', 'check the requested scopes: they must be known and authorised for this client'],
    [
      401,
      'invalid_client',
      'check clientId and clientSecret, and clientAuth (body or basic) against what the auth service expects',
    ],
    [
      403,
      'access_denied',
      'the client may not get tokens for this audience; check the audience (the partner API base URL)',
    ],
    [
      400,
      'unauthorized_client',
      'this client may not use the client_credentials grant; check its set-up in the partner console',
    ],
  ])(
    '%i %s → TokenRequestError with status, error and description, one request',
    async (status, error, hint) => {
      server.next(() => ({ status, body: { error, error_description: 'told by the server' } }));
      const thrown = await providerFor(server)
        .getToken()
        .catch((e: unknown) => e);
      expect(thrown).toBeInstanceOf(TokenRequestError);
      expect(thrown).toMatchObject({
        code: 'ERR_TOKEN_REQUEST',
        status,
        error,
        errorDescription: 'told by the server',
      });
      expect((thrown as Error).message).toBe(
        `the token endpoint ${server.tokenUrl} answered ${status} with ${error} (told by the server); ${hint}.`,
      );
      expect(server.requests).toHaveLength(1);
    },
  );

  it('a wrong secret is refused by the real server with invalid_client', async () => {
    await expect(providerFor(server, { clientSecret: 'wrong-secret-123' }).getToken()).rejects.toMatchObject({
      status: 401,
      error: 'invalid_client',
    });
  });
});

describe('retries', () => {
  it.each([408, 429, 500, 502, 503, 504])('retries %i and succeeds', async (status) => {
    server.next(() => ({ status, body: { error: 'temporarily_unavailable' } }));
    const { sleep, waits } = recordingSleep();
    await expect(providerFor(server, { sleep }).getToken()).resolves.toMatchObject({ tokenType: 'Bearer' });
    expect(server.requests).toHaveLength(2);
    expect(waits).toHaveLength(1);
  });

  it('retries network errors', async () => {
    server.next(
      () => 'destroy',
      () => 'destroy',
    );
    const events: TokenEvent[] = [];
    const { sleep } = recordingSleep();
    await providerFor(server, { sleep, onEvent: (e) => events.push(e) }).getToken();
    expect(server.requests).toHaveLength(3);
    expect(events.filter((e) => e.type === 'retry-scheduled')).toMatchObject([
      { attempt: 1, reason: 'network' },
      { attempt: 2, reason: 'network' },
    ]);
  });

  it('backs off exponentially with full jitter, capped, 3 attempts by default', async () => {
    server.next(
      () => ({ status: 500 }),
      () => ({ status: 500 }),
      () => ({ status: 500 }),
    );
    const { sleep, waits } = recordingSleep();
    const error = await providerFor(server, { sleep, random: () => 0.5 })
      .getToken()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenRequestError);
    expect((error as Error).message).toBe(
      `the token endpoint ${server.tokenUrl} answered 500 with no OAuth error code after 3 attempts; the auth service is failing; try again later.`,
    );
    expect(server.requests).toHaveLength(3);
    // full jitter: random × min(maxDelay, base × 2^(retry-1)) with base 200.
    expect(waits).toEqual([100, 200]);

    server.next(...Array.from({ length: 5 }, () => () => ({ status: 503 })));
    const capped = recordingSleep();
    await providerFor(server, {
      sleep: capped.sleep,
      random: () => 0.999,
      retry: { maxAttempts: 6, baseDelayMs: 1000, maxDelayMs: 3000 },
    }).getToken();
    expect(capped.waits).toEqual([999, 1998, 2997, 2997, 2997]);
  });

  it('gives up on network errors with TokenNetworkError', async () => {
    const closed = await startTokenServer();
    const tokenUrl = closed.tokenUrl;
    await closed.close();
    const error = await providerFor(server, { tokenUrl })
      .getToken()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenNetworkError);
    expect((error as Error).message).toMatch(
      /^could not get a token from http:\/\/127\.0\.0\.1:\d+\/oauth\/token after 3 attempts: .+; check that the auth service is reachable from this host \(authUrl\/tokenUrl, DNS, proxy, firewall\)\.$/,
    );
    expect((error as Error).cause).toBeDefined();
  });

  it('times an attempt out after requestTimeoutMs', async () => {
    server.next(() => 'hang');
    const error = await providerFor(server, { requestTimeoutMs: 100, retry: { maxAttempts: 1 } })
      .getToken()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenNetworkError);
    expect((error as Error).message).toContain('it did not answer within 100 ms');
  });

  it('honours Retry-After in seconds', async () => {
    server.next(() => ({ status: 429, headers: { 'retry-after': '7' } }));
    const { sleep, waits } = recordingSleep();
    await providerFor(server, { sleep }).getToken();
    expect(waits).toEqual([7000]);
  });

  it('honours Retry-After as an HTTP date', async () => {
    const clock = fakeClock(Date.UTC(2026, 0, 1, 12, 0, 0));
    const local = await startTokenServer({ now: clock.now });
    try {
      local.next(() => ({ status: 503, headers: { 'retry-after': 'Thu, 01 Jan 2026 12:00:05 GMT' } }));
      const { sleep, waits } = recordingSleep();
      await providerFor(local, { sleep, clock }).getToken();
      expect(waits).toEqual([5000]);
    } finally {
      await local.close();
    }
  });

  it('waits for a Retry-After up to retry.maxRetryAfterMs, and fails at once on a longer one', async () => {
    server.next(() => ({ status: 429, headers: { 'retry-after': '2' } }));
    const { sleep, waits } = recordingSleep();
    await providerFor(server, { sleep, retry: { maxRetryAfterMs: 2_000 } }).getToken();
    expect(waits).toEqual([2000]);
    const before = server.tokenRequests();
    server.next(() => ({ status: 429, headers: { 'retry-after': '3' } }));
    const error = await providerFor(server, { sleep, retry: { maxRetryAfterMs: 2_000 } })
      .getToken()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenThrottledError);
    expect(error).toMatchObject({ retryAfterMs: 3_000 });
    // Not slept, not retried.
    expect(waits).toEqual([2000]);
    expect(server.tokenRequests() - before).toBe(1);
  });

  it('throws TokenThrottledError when the attempts run out on 429/503 with Retry-After', async () => {
    server.next(
      () => ({ status: 503, headers: { 'retry-after': '1' } }),
      () => ({ status: 503, headers: { 'retry-after': '2' } }),
    );
    const error = await providerFor(server, { retry: { maxAttempts: 2 } })
      .getToken()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenThrottledError);
    expect((error as Error).message).toBe(
      `the token endpoint ${server.tokenUrl} answered 503 asking to retry after 2 s; token requests for these scopes fail fast until then: retry later or lower the request rate.`,
    );
  });
});
