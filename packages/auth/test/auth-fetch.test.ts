import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createAuthFetch } from '../src/auth-fetch.js';
import { BearerInsufficientScopeError, ScopeNotGrantedError } from '../src/errors.js';
import { startApiServer } from './support/api-server.js';
import { providerFor } from './support/provider.js';
import { startTokenServer, type TokenServer } from './support/token-server.js';

let tokens: TokenServer;
let api: Awaited<ReturnType<typeof startApiServer>>;
beforeAll(async () => {
  tokens = await startTokenServer();
  api = await startApiServer();
});
afterAll(async () => {
  await tokens.close();
  await api.close();
});
afterEach(() => {
  tokens.requests.length = 0;
  api.requests.length = 0;
});

const expired = () => ({
  status: 401,
  headers: {
    'www-authenticate': 'Bearer realm="partner-api", error="invalid_token", error_description="expired"',
  },
  body: '{"error":"invalid_token"}',
});

describe('createAuthFetch', () => {
  it('sends Authorization: Bearer with the provider token', async () => {
    const authFetch = createAuthFetch(providerFor(tokens));
    const response = await authFetch(`${api.url}/v3/partner/p/loans?limit=2`);
    expect(response.status).toBe(200);
    expect(api.requests[0]?.authorization).toBe(`Bearer ${tokens.issued.at(-1)}`);
    expect(api.requests[0]?.path).toBe('/v3/partner/p/loans?limit=2');
  });

  it('asks the provider for the scopes scopesFor names', async () => {
    const authFetch = createAuthFetch(providerFor(tokens), {
      scopesFor: (request) => (request.method === 'GET' ? ['read:loans'] : ['create:loan_draft']),
    });
    await authFetch(`${api.url}/loans`);
    await authFetch(new Request(`${api.url}/loan_draft`, { method: 'POST', body: '{}' }));
    expect(tokens.requests.map((r) => r.form.get('scope'))).toEqual(['read:loans', 'create:loan_draft']);
  });

  it('on a 401 Bearer challenge: invalidates, gets a fresh token and replays once with the same body', async () => {
    const authFetch = createAuthFetch(providerFor(tokens));
    await authFetch(`${api.url}/warm-up`);
    api.requests.length = 0;
    api.next(expired);
    const body = JSON.stringify({ amount: 125_000, note: 'x'.repeat(100_000) });
    const response = await authFetch(`${api.url}/journals`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'k-1' },
      body,
    });
    expect(response.status).toBe(200);
    expect(api.requests).toHaveLength(2);
    expect(api.requests[0]?.body).toBe(body);
    expect(api.requests[1]?.body).toBe(body);
    expect(api.requests[0]?.authorization).toBe(`Bearer ${tokens.issued.at(-2)}`);
    expect(api.requests[1]?.authorization).toBe(`Bearer ${tokens.issued.at(-1)}`);
    expect(tokens.requests).toHaveLength(2);
  });

  it('replays a streamed body too', async () => {
    const authFetch = createAuthFetch(providerFor(tokens));
    api.next(expired);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('part-1;'));
        controller.enqueue(new TextEncoder().encode('part-2'));
        controller.close();
      },
    });
    const response = await authFetch(
      new Request(`${api.url}/repayments`, { method: 'POST', body: stream, duplex: 'half' } as RequestInit),
    );
    expect(response.status).toBe(200);
    expect(api.requests.map((r) => r.body)).toEqual(['part-1;part-2', 'part-1;part-2']);
  });

  it('replays only once: a second 401 is returned as it is', async () => {
    const authFetch = createAuthFetch(providerFor(tokens));
    api.next(expired, expired);
    const response = await authFetch(`${api.url}/loans`);
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ error: 'invalid_token' });
    expect(api.requests).toHaveLength(2);
  });

  it('does not replay a 401 without a Bearer challenge', async () => {
    const authFetch = createAuthFetch(providerFor(tokens));
    api.next(() => ({ status: 401, headers: { 'www-authenticate': 'Basic realm="x"' } }));
    expect((await authFetch(`${api.url}/loans`)).status).toBe(401);
    api.next(() => ({ status: 401 }));
    expect((await authFetch(`${api.url}/loans`)).status).toBe(401);
    expect(api.requests).toHaveLength(2);
    expect(tokens.requests).toHaveLength(1);
  });

  it('turns a 403 insufficient_scope into BearerInsufficientScopeError carrying the challenge scope, without replay', async () => {
    const authFetch = createAuthFetch(providerFor(tokens));
    api.next(() => ({
      status: 403,
      headers: { 'www-authenticate': 'Bearer error="insufficient_scope", scope="create:repayment"' },
    }));
    const error = await authFetch(`${api.url}/repayments`, { method: 'POST', body: '{}' }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(BearerInsufficientScopeError);
    expect(error).toMatchObject({
      code: 'ERR_BEARER_INSUFFICIENT_SCOPE',
      scope: 'create:repayment',
      status: 403,
    });
    expect((error as Error).message).toBe(
      'the API refused the request with 403 insufficient_scope (needs "create:repayment"); the access token lacks a scope this operation requires: ask for it in getToken({ scopes }) and make sure the client is authorised for it.',
    );
    expect(api.requests).toHaveLength(1);
  });

  it('turns a 403 insufficient_scope on the replay into BearerInsufficientScopeError too', async () => {
    const authFetch = createAuthFetch(providerFor(tokens));
    api.next(expired, () => ({
      status: 403,
      headers: { 'www-authenticate': 'Bearer error="insufficient_scope", scope="create:journal_update"' },
    }));
    const error = await authFetch(`${api.url}/journals`, { method: 'POST', body: '{}' }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(BearerInsufficientScopeError);
    expect(error).toMatchObject({ scope: 'create:journal_update' });
    expect(api.requests).toHaveLength(2);
  });

  it("returns the 403 untouched with insufficientScope: 'return'", async () => {
    const authFetch = createAuthFetch(providerFor(tokens), { insufficientScope: 'return' });
    api.next(() => ({
      status: 403,
      headers: { 'www-authenticate': 'Bearer error="insufficient_scope", scope="create:repayment"' },
      body: '{"error":"insufficient_scope"}',
    }));
    const response = await authFetch(`${api.url}/repayments`, { method: 'POST', body: '{}' });
    expect(response.status).toBe(403);
    expect(await response.json()).toEqual({ error: 'insufficient_scope' });
    expect(api.requests).toHaveLength(1);
  });

  it('passes other 403 answers through', async () => {
    const authFetch = createAuthFetch(providerFor(tokens));
    api.next(() => ({ status: 403, body: '{"error":"forbidden"}' }));
    expect((await authFetch(`${api.url}/loans`)).status).toBe(403);
  });

  it('raises ScopeNotGrantedError before any API request is sent', async () => {
    const narrow = await startTokenServer({ authorisedScopes: ['read:loans'] });
    try {
      const authFetch = createAuthFetch(providerFor(narrow), { scopesFor: () => ['create:repayment'] });
      const error = await authFetch(`${api.url}/repayments`, { method: 'POST', body: '{}' }).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ScopeNotGrantedError);
      expect(error).toMatchObject({ missingScopes: ['create:repayment'], grantedScopes: [] });
      expect(api.requests).toHaveLength(0);
    } finally {
      await narrow.close();
    }
  });

  it('refuses an unknown insufficientScope mode', () => {
    expect(() => createAuthFetch(providerFor(tokens), { insufficientScope: 'ignore' as 'throw' })).toThrow(
      "createAuthFetch: insufficientScope must be 'throw' or 'return', got \"ignore\".",
    );
  });
});
