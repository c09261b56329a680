import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redactor, Secret } from '../../src/common/redact.js';
import { CheckContext } from '../../src/server/context.js';
import { type Exchange, HttpProbe } from '../../src/server/http/probe.js';
import { json, startServer, type TestServer } from '../helpers.js';

// A tiny token endpoint: grants requested ∩ {read:loans, create:loan_draft}, opaque tokens, counts asks.
let server: TestServer;
let tokenRequests = 0;
const authorised = ['read:loans', 'create:loan_draft'];
beforeAll(async () => {
  server = await startServer((req, res, body) => {
    if (req.url === '/oauth/token') {
      tokenRequests += 1;
      const form = new URLSearchParams(body);
      const allowed = form.get('client_id') === 'narrow' ? ['read:loans'] : authorised;
      const asked = form.get('scope')?.split(' ') ?? allowed;
      const granted = asked.filter((scope) => allowed.includes(scope));
      if (granted.length === 0) return json(res, 400, { error: 'invalid_scope' });
      return json(res, 200, {
        access_token: `opaque-${granted.join('-')}-token`,
        token_type: 'bearer',
        scope: granted.join(' '),
        partnerId: 'p 1',
      });
    }
    json(res, 200, { url: req.url, authorization: req.headers.authorization ?? null, body });
  });
});
afterAll(() => server.close());

function context(clientId = 'id-1') {
  const exchanges: Exchange[] = [];
  const redactor = new Redactor();
  return new CheckContext({
    target: {
      authUrl: server.url,
      tokenUrl: `${server.url}/oauth/token`,
      baseUrl: `${server.url}/base/`,
      audience: server.url,
      clientId: new Secret(clientId),
      clientSecret: new Secret('secret-1'),
    },
    settings: {
      allowWrites: false,
      expectScopes: undefined,
      maxExpiryWaitSeconds: 20,
      foreignPartnerId: undefined,
      otherClient: undefined,
      jwksUrl: undefined,
    },
    probe: new HttpProbe({ onExchange: (e) => exchanges.push(e) }),
    redactor,
    exchanges,
    now: Date.now,
    sleep: async () => {},
  });
}

describe('CheckContext', () => {
  it('shares one token request per distinct ask and reads the granted scope', async () => {
    const ctx = context();
    ctx.main = await ctx.requestToken({ scopes: ['read:loans', 'create:loan_draft', 'create:repayment'] });
    expect(ctx.authorised).toEqual(['read:loans', 'create:loan_draft']);
    expect(ctx.partnerId).toBe('p 1');
    const before = tokenRequests;
    const [a, b] = await Promise.all([ctx.tokenFor(['read:loans']), ctx.tokenFor(['read:loans'])]);
    expect(a).toBe(b);
    expect(tokenRequests).toBe(before + 1);
    expect(ctx.redactor.redact(a.accessToken!)).toBe('…-token');
  });

  it('finds a token without a scope: A minus it, or none when A is only that scope', async () => {
    const ctx = context();
    ctx.main = await ctx.requestToken({ scopes: ['read:loans', 'create:loan_draft'] });
    expect((await ctx.tokenWithout('read:loans'))?.granted).toEqual(['create:loan_draft']);
    expect(await ctx.tokenWithout('create:repayment')).toBe(ctx.main);
    const only = context('narrow');
    only.main = await only.requestToken({ scopes: ['read:loans'] });
    // Asking for the three others gives invalid_scope here: no such token.
    expect(await only.tokenWithout('read:loans')).toBeUndefined();
  });

  it('calls API operations below the base path, encoding the partner id, Bearer by default', async () => {
    const ctx = context();
    ctx.main = await ctx.requestToken({ scopes: ['read:loans'] });
    const list = await ctx.callApi('listLoans', { query: { limit: '1' } });
    expect(list.json).toEqual({
      url: '/base/v3/partner/p%201/loans?limit=1',
      authorization: 'Bearer opaque-read:loans-token',
      body: '',
    });
    const create = await ctx.callApi('createRepayment', { authorization: null, partnerId: 'other' });
    expect(create.json).toEqual({
      url: '/base/v3/partner/other/repayments',
      authorization: null,
      body: '{}',
    });
    expect(ctx.exchanges.length).toBe(3);
  });
});

describe('CheckContext.issuer (the suite-hosted issuer)', () => {
  const make = (baseUrl: string, listen?: string) =>
    new CheckContext({
      target: {
        authUrl: baseUrl,
        tokenUrl: `${baseUrl}/oauth/token`,
        baseUrl,
        audience: baseUrl,
        clientId: new Secret('client-id'),
        clientSecret: new Secret('client-secret'),
      },
      settings: {
        allowWrites: false,
        expectScopes: undefined,
        maxExpiryWaitSeconds: 20,
        foreignPartnerId: undefined,
        otherClient: undefined,
        jwksUrl: undefined,
        listen,
      },
      probe: new HttpProbe(),
      redactor: new Redactor(),
      exchanges: [],
      now: Date.now,
      sleep: async () => {},
    });

  it('says a remote target cannot reach it without --listen, instead of starting one', async () => {
    const context = make('https://api.partner.example');
    expect(await context.issuer()).toEqual({
      issuer: undefined,
      reason:
        "the target api.partner.example cannot reach the suite's issuer on this machine's loopback address; give --listen HOST with an address of this machine that the target can reach",
    });
  });

  it('listens on --listen for a remote target, and on loopback for a loopback one', async () => {
    const remote = make('https://api.partner.example', '127.0.0.1');
    const local = make('http://127.0.0.1:9');
    try {
      const found = await remote.issuer();
      expect(found.issuer?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const meta = await fetch(`${found.issuer!.url}/jku/.well-known/openid-configuration`);
      expect(meta.status).toBe(200);
      expect((await local.issuer()).issuer?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    } finally {
      await remote.close();
      await local.close();
    }
  });
});
