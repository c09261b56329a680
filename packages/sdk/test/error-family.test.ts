// One error family, the token kept home, options checked per call, options passed through.
import { inspect } from 'node:util';
import {
  type AccessToken,
  createMemoryTokenStore,
  TokenRequestError,
  type TokenStore,
} from '@partner-lending/auth';
import { type RunningMock, startMock } from '@partner-lending/mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BadRequestError,
  ConfigurationError,
  createPartnerClient,
  PartnerApiError,
  type PartnerApiErrorCode,
  ScopeNotGrantedError,
} from '../src/index.js';
import { json, startServer, type TestServer } from './support/server.js';

let mock: RunningMock;
let echo: TestServer;
let elsewhere: TestServer;
let failingAuth: TestServer;
beforeAll(async () => {
  mock = await startMock();
  // An API that echoes the Authorization header it got, in its error body, a header and the challenge.
  echo = await startServer((request, response) => {
    const sent = request.headers.authorization ?? '';
    const token = sent.replace(/^Bearer /, '');
    json(
      response,
      400,
      {
        error: 'invalid_request',
        error_description: `bad request with ${sent}`,
        echo: { sent, list: [token] },
      },
      {
        'x-request-id': `req-${token}`,
        'www-authenticate': `Bearer error="invalid_request", error_description="${token}"`,
      },
    );
  });
  elsewhere = await startServer((_request, response) => json(response, 200, []));
  failingAuth = await startServer((_request, response) => json(response, 500, { error: 'server_error' }));
});
afterAll(async () => {
  await Promise.all([echo.close(), elsewhere.close(), failingAuth.close()]);
  await mock.close();
});

const JWT = `eyJhbGciOiJFUzI1NiJ9.${'eyJzdWIiOiJ4In0'.repeat(4)}.${'s1gnature-'.repeat(5)}tail42`;
const jwtProvider = {
  async getToken(): Promise<AccessToken> {
    return {
      accessToken: JWT,
      tokenType: 'Bearer',
      expiresAt: Date.now() + 3_600_000,
      grantedScopes: ['read:loans'],
      partnerId: 'partner-1',
      issuer: 'https://auth.test/',
      jti: 'j',
    };
  },
  async invalidate() {},
};

describe('one error family', () => {
  it('a wrong client secret is a PartnerApiError too (the README’s catch catches it)', async () => {
    const [partner] = mock.clients;
    const client = createPartnerClient({
      authUrl: mock.authUrl,
      baseUrl: mock.baseUrl,
      clientId: partner!.clientId,
      clientSecret: 'not-the-secret',
      env: {},
    });
    const error = await client.loans.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PartnerApiError);
    expect(error).toBeInstanceOf(TokenRequestError);
    const code: PartnerApiErrorCode = (error as PartnerApiError).code;
    expect(code).toBe('ERR_TOKEN_REQUEST');
    expect((error as Error).message).not.toContain('not-the-secret');
  });

  it('a failing token endpoint is reported as such, not as an unreachable API, and not retried by the SDK', async () => {
    const before = failingAuth.seen.length;
    const client = createPartnerClient({
      authUrl: failingAuth.url,
      baseUrl: elsewhere.url,
      clientId: 'id',
      clientSecret: 'secret',
      retry: { maxRetries: 1, baseDelayMs: 1 },
      maxRetries: 2,
      env: {},
    });
    const apiBefore = elsewhere.seen.length;
    const error = await client.loans.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenRequestError);
    expect((error as Error).message).toMatch(
      /^the token endpoint http:\/\/127\.0\.0\.1:\d+\/oauth\/token answered 500/,
    );
    // The provider's own sequence (retry.maxRetries + 1), not multiplied by the SDK's maxRetries.
    expect(failingAuth.seen.length - before).toBe(2);
    expect(elsewhere.seen.length).toBe(apiBefore);
  });

  it('codes are unique per class across both packages', async () => {
    const auth = await import('@partner-lending/auth');
    const sdk = await import('../src/index.js');
    const codes = new Map<string, string>();
    const samples: [string, PartnerApiError][] = [
      ['ScopeNotGrantedError', new sdk.ScopeNotGrantedError(['a'], ['b'])],
      ['BearerInsufficientScopeError', new auth.BearerInsufficientScopeError('a')],
      ['InsufficientScopeError', new sdk.InsufficientScopeError('m')],
      ['PermissionDeniedError', new sdk.PermissionDeniedError('m')],
      ['TokenRequestError', new auth.TokenRequestError('m', { status: 400 })],
      ['ConfigurationError', new sdk.ConfigurationError('m')],
      ['APITimeoutError', new sdk.APITimeoutError('m')],
      ['APIConnectionError', new sdk.APIConnectionError('m')],
      ['TokenNetworkError', new auth.TokenNetworkError('m')],
    ];
    for (const [name, error] of samples) {
      expect(error).toBeInstanceOf(sdk.PartnerApiError);
      expect(codes.has(error.code), `${name} shares ${error.code} with ${codes.get(error.code)}`).toBe(false);
      codes.set(error.code, name);
    }
  });
});

describe('the token stays home', () => {
  it('never puts a whole echoed token in an error: message, body, headers, challenge, JSON or inspect', async () => {
    const client = createPartnerClient({ baseUrl: echo.url, tokenProvider: jwtProvider, env: {} });
    const error = await client.loans.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    // The test is not vacuous: the server did get (and echo) the whole token.
    expect(echo.seen.at(-1)?.headers.authorization).toBe(`Bearer ${JWT}`);
    const views = [
      (error as Error).message,
      JSON.stringify(error),
      JSON.stringify((error as PartnerApiError).body),
      JSON.stringify((error as PartnerApiError).challenge),
      String((error as PartnerApiError).requestId),
      inspect(error, { depth: 10 }),
    ];
    for (const view of views) expect(view).not.toContain(JWT.slice(0, 40));
    expect((error as PartnerApiError).errorDescription).toBe('…tail42');
    expect((error as PartnerApiError).body).toMatchObject({
      error_description: 'bad request with Bearer …tail42',
    });
  });

  it('refuses to send the token to another origin named per call, sending nothing', async () => {
    const client = createPartnerClient({ baseUrl: echo.url, tokenProvider: jwtProvider, env: {} });
    const before = elsewhere.seen.length;
    const error = await client
      .GET('/v3/partner/{partner_id}/loans', { baseUrl: elsewhere.url })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toBe(
      `Refusing to send the access token to ${elsewhere.url}: it only goes to the configured baseUrl (${new URL(echo.url).origin}). Remove the per-call baseUrl, or create a client for that API.`,
    );
    expect(elsewhere.seen.length).toBe(before);
  });
});

describe('per-call options are checked like client options', () => {
  it('refuses maxRetries NaN (which used to retry a 503 forever), a bad timeout, a bad limit', async () => {
    const client = createPartnerClient({ baseUrl: elsewhere.url, tokenProvider: jwtProvider, env: {} });
    const before = elsewhere.seen.length;
    await expect(client.loans.list({ maxRetries: Number.NaN })).rejects.toThrow(
      new ConfigurationError(
        'maxRetries (per call) NaN is not a whole number ≥ 0; pass e.g. 2 (the default), or 0 to never retry.',
      ),
    );
    await expect(client.loans.list({ timeoutMs: -1 })).rejects.toBeInstanceOf(ConfigurationError);
    await expect(client.loans.list({ limit: 0 })).rejects.toBeInstanceOf(ConfigurationError);
    await expect(
      client.GET('/v3/partner/{partner_id}/loans', { maxRetries: 1.5 } as never),
    ).rejects.toBeInstanceOf(ConfigurationError);
    // The generator does not throw when called: the error comes with the first page.
    let first: Promise<unknown> | undefined;
    expect(() => {
      first = client.loans.iterate({ pageSize: 0 }).next();
    }).not.toThrow();
    await expect(first).rejects.toBeInstanceOf(ConfigurationError);
    expect(elsewhere.seen.length).toBe(before);
  });
});

describe('options passed through to the token provider', () => {
  it('uses the store given (one option, as a fleet shares one) and the retry options', async () => {
    const inner = createMemoryTokenStore();
    const used: string[] = [];
    const store: TokenStore = {
      get: (key) => {
        used.push('get');
        return inner.get(key);
      },
      set: (key, value, ttl) => {
        used.push('set');
        return inner.set(key, value, ttl);
      },
      delete: (key) => inner.delete(key),
    };
    const [partner] = mock.clients;
    const options = {
      authUrl: mock.authUrl,
      baseUrl: mock.baseUrl,
      clientId: partner!.clientId,
      clientSecret: partner!.clientSecret,
      store,
      env: {},
    };
    const before = mock.tokenRequestCount();
    await createPartnerClient(options).loans.list({ limit: 1 });
    await createPartnerClient(options).loans.list({ limit: 1 });
    expect(used).toEqual(expect.arrayContaining(['get', 'set']));
    // The second client (another process's worth) took the token from the store.
    expect(mock.tokenRequestCount() - before).toBe(1);
  });

  it('refuses provider options next to a tokenProvider, naming them', () => {
    expect(() =>
      createPartnerClient({
        baseUrl: elsewhere.url,
        tokenProvider: jwtProvider,
        store: createMemoryTokenStore(),
        retry: { maxRetries: 1 },
        env: {},
      }),
    ).toThrow(
      'store, retry configure the token provider the client creates, but a tokenProvider was given: set them on that provider instead.',
    );
  });

  it('reports invalid provider options as ConfigurationError', () => {
    let error: unknown;
    try {
      createPartnerClient({
        authUrl: mock.authUrl,
        baseUrl: mock.baseUrl,
        clientId: 'id',
        clientSecret: 'secret',
        refresh: { hardWindowMs: -1 },
        env: {},
      });
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toBe(
      'The token provider options are invalid: createTokenProvider: refresh.hardWindowMs must be a finite number ≥ 0, got -1.',
    );
    // The provider's own error, the same class (the auth package's), kept as the cause.
    expect((error as Error).cause).toBeInstanceOf(ConfigurationError);
    expect((error as Error).cause).not.toBeInstanceOf(TypeError);
  });

  it('does not claim "granted: none" when the token endpoint refuses a scope outright', async () => {
    const refusing = await startServer((_request, response) =>
      json(response, 400, { error: 'invalid_scope', error_description: 'not for you' }),
    );
    try {
      const client = createPartnerClient({
        authUrl: refusing.url,
        baseUrl: elsewhere.url,
        clientId: 'id',
        clientSecret: 'secret',
        env: {},
      });
      const error = await client.repayments.create({ amount: 1 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ScopeNotGrantedError);
      expect((error as Error).message).toContain('(it refused the request with invalid_scope)');
      expect((error as Error).message).not.toContain('granted: none');
    } finally {
      await refusing.close();
    }
  });
});

describe('withResponse', () => {
  it('gives the data with the status, headers and the raw Response', async () => {
    const [partner] = mock.clients;
    const client = createPartnerClient({
      authUrl: mock.authUrl,
      baseUrl: mock.baseUrl,
      clientId: partner!.clientId,
      clientSecret: partner!.clientSecret,
      env: {},
    });
    const { data, status, headers, response } = await client.loans.list({ limit: 2 }).withResponse();
    expect(status).toBe(200);
    expect(headers.get('x-total-count')).toBe(String(data.total));
    expect(response).toBeInstanceOf(Response);
    expect(data.items).toHaveLength(2);
    const created = await client.loanDrafts.create({ amount: 5 }).withResponse();
    expect(created.status).toBe(201);
    expect(created.data).toMatchObject({ amount: 5 });
  });
});

describe('plain http to a non-loopback API', () => {
  it('is refused, and allowed only with the loud opt-out, which warns at run time', async () => {
    expect(() =>
      createPartnerClient({ baseUrl: 'http://api.example', tokenProvider: jwtProvider, env: {} }),
    ).toThrow(ConfigurationError);
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.message);
    process.on('warning', onWarning);
    try {
      createPartnerClient({
        baseUrl: 'http://api.example',
        tokenProvider: jwtProvider,
        dangerouslyAllowInsecureHttp: true,
        env: {},
      });
      // Process warnings are emitted on a later tick.
      await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings).toContain(
      'dangerouslyAllowInsecureHttp is set: access tokens are sent to the partner API over plain http.',
    );
  });
});
