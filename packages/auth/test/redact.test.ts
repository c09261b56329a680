import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuthFetch } from '../src/auth-fetch.js';
import { redactSecrets, shortenToken } from '../src/redact.js';
import type { TokenEvent } from '../src/token-event.js';
import { createTokenProvider, type TokenProviderOptions } from '../src/token-provider.js';
import { startApiServer } from './support/api-server.js';
import { providerFor } from './support/provider.js';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  type Handler,
  startTokenServer,
  type TokenServer,
} from './support/token-server.js';

describe('shortenToken and redactSecrets', () => {
  it('keep at most the last 6 characters of a token', () => {
    expect(shortenToken('aaaaaaaaaaaaaaaaaaaa.bbbbbb.cccccc123456')).toBe('…123456');
    expect(shortenToken('short-token')).toBe('…');
  });
  it('replace every occurrence of a secret', () => {
    expect(redactSecrets('a s3cret b s3cret', ['s3cret'])).toBe('a [REDACTED] b [REDACTED]');
  });
});

describe('secrets never leak (every error path, every output)', () => {
  let server: TokenServer;
  let api: Awaited<ReturnType<typeof startApiServer>>;
  const outputs: string[] = [];
  const messages: string[] = [];
  const events: TokenEvent[] = [];

  const record = (value: unknown) => {
    outputs.push(inspect(value, { depth: 20, showHidden: true, getters: true }));
    try {
      outputs.push(JSON.stringify(value) ?? '');
    } catch {
      // circular: inspect above covers it
    }
    if (value instanceof Error) {
      messages.push(value.message);
      outputs.push(value.message, String(value.stack));
      let cause: unknown = value.cause;
      while (cause instanceof Error) {
        outputs.push(cause.message, String(cause.stack), inspect(cause, { depth: 20, showHidden: true }));
        cause = cause.cause;
      }
    }
  };

  const run = async (promise: Promise<unknown>) => {
    try {
      record(await promise);
    } catch (error) {
      record(error);
    }
  };

  const make = (options: Partial<TokenProviderOptions> = {}) =>
    providerFor(server, { onEvent: (e) => events.push(e), retry: { maxAttempts: 2 }, ...options });
  const tweak =
    (o: Parameters<Parameters<Handler>[1]>[0]): Handler =>
    async (_r, issue) => ({ body: await issue(o) });

  beforeAll(async () => {
    server = await startTokenServer({ authorisedScopes: ['read:loans', 'create:loan_draft'] });
    api = await startApiServer();
  });
  afterAll(async () => {
    await server.close();
    await api.close();
  });

  it('drives every error path, then scans all output', async () => {
    const echo = `client ${CLIENT_ID} secret ${CLIENT_SECRET} rejected`;
    // Token endpoint refusals, one of them echoing the credentials back.
    server.next(() => ({ status: 401, body: { error: 'invalid_client', error_description: echo } }));
    await run(make().getToken());
    server.next(() => ({ status: 400, body: { error: CLIENT_SECRET, error_description: 'x' } }));
    await run(make().getToken());
    server.next(() => ({ status: 403, body: { error: 'access_denied' } }));
    await run(make({ clientAuth: 'basic' }).getToken());
    // A server (or proxy) echoing the request: the Basic header, the form body, an encoded secret.
    const sentBasic = Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64');
    server.next(() => ({
      status: 401,
      body: { error: 'invalid_client', error_description: `got "Authorization: Basic ${sentBasic}"` },
    }));
    await run(make({ clientAuth: 'basic' }).getToken());
    server.next(() => ({
      status: 400,
      body: {
        error: 'invalid_request',
        error_description: `body was client_secret=${encodeURIComponent(`${CLIENT_SECRET}/+ x`)}`,
      },
    }));
    await run(make({ clientSecret: `${CLIENT_SECRET}/+ x` }).getToken());
    await run(make({ clientSecret: `${CLIENT_SECRET}-wrong` }).getToken());
    await run(make({ clientSecret: `${CLIENT_SECRET}-wrong`, clientAuth: 'basic' }).getToken());
    // Redirect whose Location carries the secret.
    server.next(() => ({ status: 302, headers: { location: `https://evil.example/?s=${CLIENT_SECRET}` } }));
    await run(make().getToken());
    // Retries exhausted, throttling, fail fast.
    server.next(
      () => ({ status: 500, body: echo }),
      () => ({ status: 502 }),
    );
    await run(make().getToken());
    const throttled = make();
    server.next(
      () => ({ status: 429, headers: { 'retry-after': '1' } }),
      () => ({ status: 503, headers: { 'retry-after': '60' }, body: { error: echo } }),
    );
    await run(throttled.getToken());
    await run(throttled.getToken());
    // Network failures and timeouts.
    const gone = await startTokenServer();
    const goneUrl = gone.tokenUrl;
    await gone.close();
    await run(make({ tokenUrl: goneUrl }).getToken());
    server.next(() => 'hang');
    await run(make({ requestTimeoutMs: 50, retry: { maxAttempts: 1 } }).getToken());
    server.next(
      () => 'destroy',
      () => 'destroy',
    );
    await run(make().getToken());
    // Unusable 200 answers (tokens are issued and then refused).
    const bad: Handler[] = [
      () => ({ headers: { 'content-type': 'text/html' }, body: `<html>${CLIENT_SECRET}</html>` }),
      () => ({ headers: { 'content-type': 'application/json' }, body: `not json ${CLIENT_SECRET}` }),
      () => ({ headers: { 'content-type': 'application/json' }, body: 'x'.repeat(1024 * 1024 + 1) }),
      tweak({ response: { token_type: 'mac' } }),
      tweak({ response: { expires_in: 'never' } }),
      tweak({ claims: { aud: ['https://elsewhere.example'] } }),
      tweak({ claims: { partnerId: 'someone-else' } }),
      tweak({ claims: { exp: 1000 } }),
      tweak({ omitClaims: ['exp'] }),
      tweak({ claims: { scope: ['read:loans', 'create:loan_draft', 'create:repayment'] } }),
      tweak({ response: { iss: 'https://other.example/' } }),
      tweak({ omitFields: ['partnerId'], omitClaims: ['partnerId'] }),
      async (_r, issue) => {
        const body = await issue();
        return { body: { ...body, access_token: `${String(body.access_token)}x` } };
      },
    ];
    for (const handler of bad) {
      server.next(handler);
      await run(make({ verify: { jwks: server.jwks } }).getToken());
    }
    server.next(tweak({ alg: 'HS256' }));
    await run(make({ verify: { jwksUrl: server.jwksUrl, issuer: 'https://x.example/' } }).getToken());
    server.next(tweak({}));
    await run(make({ verify: { jwks: server.jwks, issuer: 'https://x.example/' } }).getToken());
    // Scopes: not granted, and insufficient at the API.
    await run(make().getToken({ scopes: ['read:loans', 'create:repayment'] }));
    let shift = 0;
    const provider = make({ clock: { now: () => Date.now() + shift } });
    const authFetch = createAuthFetch(provider, { scopesFor: () => ['read:loans'] });
    api.next(() => ({ status: 401, headers: { 'www-authenticate': 'Bearer error="invalid_token"' } }));
    await run(authFetch(`${api.url}/loans`).then((r) => r.status));
    api.next(() => ({
      status: 403,
      headers: { 'www-authenticate': `Bearer error="insufficient_scope", scope="create:repayment"` },
    }));
    await run(authFetch(`${api.url}/loans`));
    await run(createAuthFetch(provider, { scopesFor: () => ['create:repayment'] })(`${api.url}/repayments`));
    // Successful results (one served while refreshing in the background), the provider itself and the
    // invalidation events are output too.
    await run(provider.getToken({ scopes: ['read:loans'] }));
    shift = 3_400_000;
    await run(provider.getToken({ scopes: ['read:loans'] }));
    await new Promise((resolve) => setTimeout(resolve, 100));
    await provider.invalidate();
    record(provider);
    // Configuration errors.
    for (const options of [
      { authUrl: 'http://auth.example' },
      { authUrl: 'not a url' },
      { tokenUrl: `https://${CLIENT_ID}:${CLIENT_SECRET}@auth.example/t` },
      { authUrl: 'https://a.example', clientAuth: 'x' },
    ]) {
      try {
        createTokenProvider({
          clientId: CLIENT_ID,
          clientSecret: CLIENT_SECRET,
          audience: 'https://a.example',
          ...(options as object),
        });
      } catch (error) {
        record(error);
      }
    }
    for (const event of events) {
      record(event);
      messages.push(JSON.stringify(event));
    }

    // Every path above ran and produced output.
    expect(events.map((e) => e.type)).toEqual(
      expect.arrayContaining([
        'token-requested',
        'token-received',
        'token-request-failed',
        'cache-hit',
        'background-refresh',
        'retry-scheduled',
        'throttled',
        'invalidated',
      ]),
    );
    expect(server.issued.length).toBeGreaterThan(15);

    const basic = Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64');
    const forbidden = [
      CLIENT_SECRET,
      `${CLIENT_SECRET}-wrong`,
      basic,
      encodeURIComponent(CLIENT_SECRET),
      `${CLIENT_SECRET}/+ x`,
      encodeURIComponent(`${CLIENT_SECRET}/+ x`),
      new URLSearchParams({ s: `${CLIENT_SECRET}/+ x` }).toString().slice(2),
      ...server.issued,
    ];
    const all = outputs.join('\n');
    // The client id is a credential as well: no message or event names it.
    expect(messages.join('\n')).not.toContain(CLIENT_ID);
    expect(all).toContain('…'); // shortened tokens do appear
    for (const secret of forbidden) {
      expect(all.includes(secret), `leaked ${shortenToken(secret)}`).toBe(false);
      // no long piece of a token either (its payload or signature)
      if (secret.split('.').length === 3) {
        for (const part of secret.split('.').slice(1)) {
          if (part.length > 20)
            expect(all.includes(part), `leaked a part of ${shortenToken(secret)}`).toBe(false);
        }
      }
    }
  });
});
