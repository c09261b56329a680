import { inspect } from 'node:util';
import { scopes } from '@partner-lending/spec';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MockError, type MockOptions, type RunningMock, startMock } from '../src/index.js';
import { credentials, getLoans, sharedSigningKey, tokenFor, tokenRequest } from './helpers.js';

let mock: RunningMock;
beforeAll(async () => {
  mock = await startMock({ signingKey: await sharedSigningKey() });
});
afterAll(() => mock.close());

describe('setTokenTtl', () => {
  it('sets the lifetime of tokens issued from then on; a bad value is refused and changes nothing', async () => {
    const local = await startMock({ signingKey: await sharedSigningKey(), tokenTtlSeconds: 5 });
    try {
      const lifetime = async () =>
        (await tokenRequest(local, credentials(local, local.clients[0]!))).body.expires_in;
      // The deployed profile answers one second less than the JWT lifetime.
      expect(await lifetime()).toBe(4);
      local.setTokenTtl(3600);
      expect(await lifetime()).toBe(3599);
      expect(() => local.setTokenTtl(0)).toThrow(
        'setTokenTtl must be an integer from 1 to 315360000, got 0.',
      );
      expect(await lifetime()).toBe(3599);
    } finally {
      await local.close();
    }
  });
});

describe('startMock', () => {
  it('listens on two loopback origins and describes them', () => {
    expect(mock.authUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(mock.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(mock.authUrl).not.toBe(mock.baseUrl);
    expect(mock.audience).toBe(mock.baseUrl);
    expect(mock.issuer).toBe(`${mock.authUrl}/`);
    expect(mock.tokenUrl).toBe(`${mock.authUrl}/oauth/token`);
    expect(mock.jwksUrl).toBe(`${mock.authUrl}/.well-known/jwks.json`);
    expect(mock.profile).toBe('deployed');
    expect(mock.faults).toEqual([]);
  });

  it('generates three demo clients: all scopes, read + loan_draft, read only', () => {
    expect(mock.clients.map((client) => client.authorizedScopes)).toEqual([
      [...scopes],
      ['read:loans', 'create:loan_draft'],
      ['read:loans'],
    ]);
    expect(new Set(mock.clients.map((client) => client.partnerId)).size).toBe(3);
    for (const client of mock.clients) expect(client.clientSecret.length).toBeGreaterThanOrEqual(32);
  });

  it('keeps client secrets out of JSON.stringify and util.inspect, but usable and spreadable', () => {
    const [client] = mock.clients;
    const secret = client!.clientSecret;
    expect(JSON.stringify(mock.clients)).not.toContain(secret);
    expect(JSON.stringify(mock)).not.toContain(secret);
    expect(inspect(mock.clients, { depth: 5 })).not.toContain(secret);
    expect(inspect(mock, { depth: 5 })).not.toContain(secret);
    expect(JSON.stringify(mock.clients[0])).toContain('"clientSecret":"[redacted]"');
    expect({ ...client }.clientSecret).toBe(secret);
  });

  it('counts token requests, successful or not', async () => {
    const counted = await startMock({ signingKey: await sharedSigningKey() });
    try {
      expect(counted.tokenRequestCount()).toBe(0);
      await tokenFor(counted);
      await tokenRequest(counted, { grant_type: 'client_credentials' });
      await fetch(counted.tokenUrl); // a GET is not a token request
      expect(counted.tokenRequestCount()).toBe(2);
    } finally {
      await counted.close();
    }
  });

  it('logs requests of both servers with secrets and tokens redacted', async () => {
    const logged = await startMock({ signingKey: await sharedSigningKey() });
    try {
      const client = logged.clients[0]!;
      const token = await tokenFor(logged);
      await getLoans(logged, `Bearer ${token}`, undefined, `?limit=5&access_token=${token}`);
      await getLoans(logged, `Bearer ${token}`, 'other');
      await tokenRequest(logged, credentials(logged, client, { client_secret: 'wrong-secret' }));
      const entries = logged.requestLog();
      const text = JSON.stringify(entries);
      expect(text).not.toContain(token);
      expect(text).not.toContain(client.clientSecret);
      expect(text).not.toContain('wrong-secret');
      expect(entries.map((entry) => [entry.server, entry.method, entry.status, entry.error])).toEqual([
        ['auth', 'POST', 200, undefined],
        ['api', 'GET', 400, 'invalid_request'],
        ['api', 'GET', 403, 'access_denied'],
        ['auth', 'POST', 401, 'invalid_client'],
      ]);
      expect(entries[1]).toMatchObject({
        target: `/v3/partner/${client.partnerId}/loans?limit=5&access_token=[redacted]`,
        authorization: `Bearer …${token.slice(-6)}`,
      });
      expect(entries[2]!.partnerId).toBe(client.partnerId);
      expect(entries[0]!.partnerId).toBe(client.partnerId);
    } finally {
      await logged.close();
    }
  });

  it('logs no secret and no whole token, whatever form the credentials take', async () => {
    const logged = await startMock({ signingKey: await sharedSigningKey() });
    try {
      const client = logged.clients[0]!;
      const secret = client.clientSecret;
      const token = await tokenFor(logged);
      const basic = Buffer.from(`${client.clientId}:${secret}`).toString('base64');
      const loans = (authorization: string | undefined, query = '') =>
        getLoans(logged, authorization, undefined, query);
      await tokenRequest(logged, credentials(logged, client)); // client_secret in the form body
      await tokenRequest(
        logged,
        { grant_type: 'client_credentials' },
        { headers: { authorization: `Basic ${basic}` } },
      );
      for (const malformed of [
        `Basic ${basic}!`,
        `Basic ${client.clientId}:${secret}`,
        `Basic${basic}`,
        basic,
      ])
        await tokenRequest(
          logged,
          { grant_type: 'client_credentials' },
          { headers: { authorization: malformed } },
        );
      await tokenRequest(logged, {}, { body: `client_secret=${secret}&client_secret=${secret}` });
      await fetch(`${logged.tokenUrl}?client_secret=${secret}&client_id=${client.clientId}`, {
        method: 'POST',
      });
      for (const authorization of [
        `Bearer ${token}`,
        `Bearer ${token}x!`,
        `Bearer ${secret}`,
        `Token ${token}`,
        `Basic ${basic}`,
        token,
        `${secret} ${token}`,
      ])
        await loans(authorization);
      await loans(undefined, `?access_token=${token}`);
      await loans(undefined, `?jwt=${token}&secret=${secret}`);
      const text = JSON.stringify(logged.requestLog());
      expect(logged.requestLog()).toHaveLength(18);
      for (const forbidden of [secret, basic, token, token.slice(-7), secret.slice(-6), basic.slice(-6)])
        expect(text).not.toContain(forbidden);
      expect(text).toContain(`…${token.slice(-6)}`);
    } finally {
      await logged.close();
    }
  });

  it('closes both servers, and close() can be called twice', async () => {
    const closing = await startMock({ signingKey: await sharedSigningKey() });
    await closing.close();
    await closing.close();
    await expect(fetch(closing.tokenUrl, { method: 'POST' })).rejects.toThrow();
    await expect(fetch(closing.baseUrl)).rejects.toThrow();
  });

  it('listens on the given ports', async () => {
    const first = await startMock({ signingKey: await sharedSigningKey() });
    const authPort = Number(new URL(first.authUrl).port);
    const apiPort = Number(new URL(first.baseUrl).port);
    await first.close();
    const second = await startMock({ authPort, apiPort, signingKey: await sharedSigningKey() });
    try {
      expect(second.authUrl).toBe(first.authUrl);
      expect(second.baseUrl).toBe(first.baseUrl);
      await expect(startMock({ apiPort, signingKey: await sharedSigningKey() })).rejects.toMatchObject({
        code: 'ERR_MOCK_LISTEN',
      });
    } finally {
      await second.close();
    }
  });

  it.each<[MockOptions, string]>([
    [{ profile: 'x' as never }, 'startMock: profile must be one of deployed, rfc9068, production, got x.'],
    [{ tokenTtlSeconds: 0 }, 'startMock: tokenTtlSeconds must be an integer from 1 to 315360000, got 0.'],
    [{ tokenTtlSeconds: 1.5 }, 'startMock: tokenTtlSeconds must be an integer from 1 to 315360000, got 1.5.'],
    [{ apiPort: 70000 }, 'startMock: apiPort must be an integer from 0 to 65535, got 70000.'],
    [{ leewaySeconds: -1 }, 'startMock: leewaySeconds must be a number ≥ 0, got -1.'],
    [{ maxStored: -1 }, 'startMock: maxStored must be an integer from 0 to 10000000, got -1.'],
    [
      { maxStoredPerPartner: 1.5 },
      'startMock: maxStoredPerPartner must be an integer from 0 to 10000000, got 1.5.',
    ],
    [
      { maxStoredBytes: Number.NaN },
      'startMock: maxStoredBytes must be an integer from 0 to 9007199254740991, got NaN.',
    ],
    [{ headersTimeoutMs: 0 }, 'startMock: headersTimeoutMs must be an integer from 1 to 3600000, got 0.'],
    [{ onInternalError: 'log' as never }, 'startMock: onInternalError must be a function.'],
    [
      { emptyIntersection: 'x' as never },
      "startMock: emptyIntersection must be 'invalid_scope' or 'empty-token', got x.",
    ],
    [
      { signingKey: {} as never },
      "startMock: signingKey must be an RS256 key pair from jose's generateKeyPair('RS256').",
    ],
  ])('refuses invalid options: %j', async (options, message) => {
    const error = await startMock(options).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(MockError);
    expect(error).toMatchObject({ code: 'ERR_MOCK_OPTIONS', message });
  });

  it('refuses an invalid client registry', async () => {
    await expect(startMock({ clients: [] })).rejects.toMatchObject({ code: 'ERR_MOCK_CLIENTS' });
    await expect(
      startMock({
        clients: [
          { partnerId: 'p', clientId: 'c', clientSecret: 's', authorizedScopes: [] },
          { partnerId: 'q', clientId: 'c', clientSecret: 't', authorizedScopes: [] },
        ],
      }),
    ).rejects.toThrow('clients: entry 1 repeats a clientId.');
  });

  it('creates loansPerPartner demo loans', async () => {
    const few = await startMock({ loansPerPartner: 3, signingKey: await sharedSigningKey() });
    try {
      const answer = await getLoans(few, `Bearer ${await tokenFor(few)}`);
      expect(JSON.parse(answer.text)).toHaveLength(3);
    } finally {
      await few.close();
    }
  });
});

describe('startMock publicUrls', () => {
  it('derives the issuer and the audience from the public origins, and checks them at the API', async () => {
    const proxied = await startMock({
      signingKey: await sharedSigningKey(),
      publicUrls: { authUrl: 'http://auth.example:8080', baseUrl: 'http://api.example:8081' },
    });
    try {
      expect(proxied.issuer).toBe('http://auth.example:8080/');
      expect(proxied.audience).toBe('http://api.example:8081');
      expect(proxied.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const client = proxied.clients[0]!;
      const issued = await tokenRequest(proxied, credentials(proxied, client));
      expect(issued.status).toBe(200);
      expect(issued.body.iss).toBe('http://auth.example:8080/');
      const payload = JSON.parse(Buffer.from(issued.body.access_token.split('.')[1], 'base64url').toString());
      expect(payload.aud).toEqual(['http://api.example:8081']);
      const loans = await fetch(`${proxied.baseUrl}/v3/partner/${client.partnerId}/loans`, {
        headers: { authorization: `Bearer ${issued.body.access_token}` },
      });
      expect(loans.status).toBe(200);
      // The listening address is no longer the audience: a token asked for it is refused.
      const wrong = await tokenRequest(proxied, {
        ...credentials(proxied, client),
        audience: proxied.baseUrl,
      });
      expect(wrong.status).toBe(403);
    } finally {
      await proxied.close();
    }
  });

  it('refuses a public URL with a query, a fragment or credentials', async () => {
    for (const authUrl of [
      'http://auth.example/?a=1',
      'http://auth.example/#x',
      'http://u:p@auth.example',
      'ftp://auth.example',
    ])
      await expect(startMock({ publicUrls: { authUrl, baseUrl: 'http://api.example' } })).rejects.toThrow(
        'startMock: publicUrls.authUrl must be an http(s) URL such as http://127.0.0.1:8080 or https://proxy.example/run-1/api (no query, fragment or credentials).',
      );
  });

  it('takes a base path (a proxy routing by path): the issuer and audience keep it, the listening addresses do not', async () => {
    const mock = await startMock({
      signingKey: await sharedSigningKey(),
      publicUrls: {
        authUrl: 'https://svc.example/runs/r1/auth/',
        baseUrl: 'https://svc.example/runs/r1/api',
      },
    });
    try {
      expect(mock.issuer).toBe('https://svc.example/runs/r1/auth/');
      expect(mock.audience).toBe('https://svc.example/runs/r1/api');
      expect(mock.authUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const response = await fetch(`${mock.authUrl}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: mock.clients[0]!.clientId,
          client_secret: mock.clients[0]!.clientSecret,
          audience: 'https://svc.example/runs/r1/api',
        }),
      });
      expect(response.status).toBe(200);
    } finally {
      await mock.close();
    }
  });
});

describe('startMock handle()', () => {
  it('answers a request another server of the process received, with its body, on that server', async () => {
    const { createServer } = await import('node:http');
    const proxied = await startMock({ signingKey: await sharedSigningKey() });
    const front = createServer((req, res) =>
      proxied.handle(req.url === '/oauth/token' ? 'auth' : 'api', req, res),
    );
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(front.address() as { port: number }).port}`;
    try {
      const client = proxied.clients[0]!;
      const issued = await fetch(`${origin}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(credentials(proxied, client)),
      }).then((response) => response.json());
      expect(issued.token_type).toBe('bearer');
      const created = await fetch(`${origin}/v3/partner/${client.partnerId}/loan_draft`, {
        method: 'POST',
        headers: { authorization: `Bearer ${issued.access_token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ amount: 10 }),
      });
      expect(created.status).toBe(201);
      expect(await created.json()).toMatchObject({ amount: 10, id: expect.any(String) });
      expect(proxied.tokenRequestCount()).toBe(1);
    } finally {
      front.close();
      await proxied.close();
    }
  });
});

describe('startMock otherAudiences', () => {
  it('issues a token for another API it serves, which this API refuses; any other audience is still 403', async () => {
    const other = 'https://second-api.example';
    const multi = await startMock({ signingKey: await sharedSigningKey(), otherAudiences: [other] });
    try {
      const client = multi.clients[0]!;
      const issued = await tokenRequest(multi, { ...credentials(multi, client), audience: other });
      expect(issued.status).toBe(200);
      const payload = JSON.parse(Buffer.from(issued.body.access_token.split('.')[1], 'base64url').toString());
      expect(payload.aud).toEqual([other]);
      const refused = await fetch(`${multi.baseUrl}/v3/partner/${client.partnerId}/loans`, {
        headers: { authorization: `Bearer ${issued.body.access_token}` },
      });
      expect(refused.status).toBe(401);
      expect(refused.headers.get('www-authenticate')).toContain('invalid_token');
      const unknown = await tokenRequest(multi, {
        ...credentials(multi, client),
        audience: 'https://third.example',
      });
      expect(unknown.status).toBe(403);
    } finally {
      await multi.close();
    }
  });
});
