import { createRemoteJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockClient, type Profile, type RunningMock, startMock } from '../src/index.js';
import { credentials, decodeJwt, manualClock, sharedSigningKey, tokenRequest } from './helpers.js';

const clock = manualClock();
const clients: MockClient[] = [
  {
    partnerId: 'p-all',
    clientId: 'c-all',
    clientSecret: 's-all',
    authorizedScopes: ['read:loans', 'create:loan_draft', 'create:journal_update', 'create:repayment'],
  },
  {
    partnerId: 'p-two',
    clientId: 'c-two',
    clientSecret: 's-two',
    authorizedScopes: ['create:loan_draft', 'read:loans'],
  },
  { partnerId: 'p-none', clientId: 'c-none', clientSecret: 's-none', authorizedScopes: [] },
];

describe.each<Profile>(['deployed', 'rfc9068'])('token-response, profile %s', (profile) => {
  let mock: RunningMock;
  beforeAll(async () => {
    mock = await startMock({
      signingKey: await sharedSigningKey(),
      profile,
      clients,
      clock: clock.now,
      tokenTtlSeconds: 600,
    });
  });
  afterAll(() => mock.close());
  const ask = (client: MockClient, scope?: string) =>
    tokenRequest(mock, credentials(mock, client, { scope }));

  it('answers the fields of API documentation §2.2 with no-store', async () => {
    const answer = await ask(clients[1]!);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('application/json');
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(answer.headers.get('pragma')).toBe('no-cache');
    expect(Object.keys(answer.body).sort()).toEqual(
      ['access_token', 'expires_in', 'iss', 'jti', 'partnerId', 'scope', 'token_type'].sort(),
    );
    expect(answer.body.partnerId).toBe('p-two');
    expect(answer.body.iss).toBe(mock.issuer);
  });

  it('shapes token_type, expires_in, iss, aud, scope and typ per profile', async () => {
    const answer = await ask(clients[1]!);
    const { header, payload } = decodeJwt(answer.body.access_token);
    const now = Math.floor(clock.now() / 1000);
    expect(header).toMatchObject({ alg: 'RS256', kid: expect.any(String) });
    expect(payload).toMatchObject({
      iss: mock.issuer,
      sub: 'c-two',
      client_id: 'c-two',
      partnerId: 'p-two',
      iat: now,
      exp: now + 600,
      jti: answer.body.jti,
    });
    if (profile === 'deployed') {
      expect(answer.body.token_type).toBe('bearer');
      expect(answer.body.expires_in).toBe(599);
      expect(mock.issuer).toBe(`${mock.authUrl}/`);
      expect(payload.aud).toEqual([mock.audience]);
      expect(payload.scope).toEqual(['read:loans', 'create:loan_draft']);
      expect(header.typ).toBe('JWT');
    } else {
      expect(answer.body.token_type).toBe('Bearer');
      expect(answer.body.expires_in).toBe(600);
      expect(mock.issuer).toBe(mock.authUrl);
      expect(payload.aud).toBe(mock.audience);
      expect(payload.scope).toBe('read:loans create:loan_draft');
      expect(header.typ).toBe('at+jwt');
    }
  });

  it('signs with a key of the JWKS', async () => {
    const answer = await ask(clients[0]!);
    const jwks = createRemoteJWKSet(new URL(mock.jwksUrl));
    const { payload } = await jwtVerify(answer.body.access_token, jwks, {
      issuer: mock.issuer,
      audience: mock.audience,
      algorithms: ['RS256'],
      currentDate: new Date(clock.now()),
    });
    expect(payload.partnerId).toBe('p-all');
  });

  it('grants every authorised scope when none is requested (and for an empty scope)', async () => {
    expect((await ask(clients[1]!)).body.scope).toBe('read:loans create:loan_draft');
    expect((await ask(clients[1]!, '')).body.scope).toBe('read:loans create:loan_draft');
  });

  it('grants requested ∩ authorised, dropping unknown values (API documentation §4.1)', async () => {
    const answer = await ask(clients[1]!, 'create:repayment read:loans made:up');
    expect(answer.status).toBe(200);
    expect(answer.body.scope).toBe('read:loans');
    const claim = decodeJwt(answer.body.access_token).payload.scope;
    expect(claim).toEqual(profile === 'deployed' ? ['read:loans'] : 'read:loans');
  });

  it('answers 400 invalid_scope for an empty intersection by default', async () => {
    const answer = await ask(clients[1]!, 'create:repayment');
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({
      error: 'invalid_scope',
      error_description: 'none of the requested scopes is authorised for this client',
    });
    expect((await ask(clients[2]!)).status).toBe(400);
  });

  it('answers 400 invalid_scope for a malformed scope string', async () => {
    const answer = await ask(clients[1]!, 'read:loans "quoted"');
    expect([answer.status, answer.body.error]).toEqual([400, 'invalid_scope']);
  });

  it('refuses another audience with 403 access_denied, and treats a missing one as the API', async () => {
    const other = await tokenRequest(
      mock,
      credentials(mock, clients[0]!, { audience: 'https://elsewhere.invalid' }),
    );
    expect(other.status).toBe(403);
    expect(other.body.error).toBe('access_denied');
    expect(other.headers.get('cache-control')).toBe('no-store');
    const slash = await tokenRequest(mock, credentials(mock, clients[0]!, { audience: `${mock.audience}/` }));
    expect(slash.status).toBe(403);
    const missing = await tokenRequest(mock, credentials(mock, clients[0]!, { audience: undefined }));
    expect(missing.status).toBe(200);
  });

  it('gives every token its own jti', async () => {
    const a = await ask(clients[0]!);
    const b = await ask(clients[0]!);
    expect(a.body.jti).not.toBe(b.body.jti);
  });
});

describe('token-response: options', () => {
  it("issues a token with an empty scope under emptyIntersection: 'empty-token'", async () => {
    const mock = await startMock({
      signingKey: await sharedSigningKey(),
      clients,
      emptyIntersection: 'empty-token',
    });
    try {
      const answer = await tokenRequest(mock, credentials(mock, clients[1]!, { scope: 'create:repayment' }));
      expect(answer.status).toBe(200);
      expect(answer.body.scope).toBe('');
      expect(decodeJwt(answer.body.access_token).payload.scope).toEqual([]);
    } finally {
      await mock.close();
    }
  });

  it('answers expires_in 43199 for the default 12-hour lifetime (deployed)', async () => {
    const mock = await startMock({ signingKey: await sharedSigningKey(), clients });
    try {
      const answer = await tokenRequest(mock, credentials(mock, clients[0]!));
      expect(answer.body.expires_in).toBe(43_199);
      const { payload } = decodeJwt(answer.body.access_token);
      expect(payload.exp - payload.iat).toBe(43_200);
    } finally {
      await mock.close();
    }
  });

  it('never answers expires_in below 1: a 1-second lifetime gives 1 (deployed)', async () => {
    const mock = await startMock({ signingKey: await sharedSigningKey(), clients, tokenTtlSeconds: 1 });
    try {
      const answer = await tokenRequest(mock, credentials(mock, clients[0]!));
      expect(answer.body.expires_in).toBe(1);
      const { payload } = decodeJwt(answer.body.access_token);
      expect(payload.exp - payload.iat).toBe(1);
    } finally {
      await mock.close();
    }
  });
});
