import fc from 'fast-check';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ValidatorContext, type VerifiedToken, validateAccessToken } from '../src/access-token.js';
import { BoundedCache } from '../src/bounded-cache.js';
import { type FaultName, type MockClient, type Profile, type RunningMock, startMock } from '../src/index.js';
import { KeySet } from '../src/jwks.js';
import {
  decodeJwt,
  forge,
  getLoans,
  manualClock,
  sharedSigningKey,
  signWithForeignKey,
  tokenFor,
} from './helpers.js';

const clients: MockClient[] = [
  {
    partnerId: 'p-1',
    clientId: 'c-1',
    clientSecret: 's-1',
    authorizedScopes: ['read:loans', 'create:loan_draft'],
  },
];

describe.each<Profile>(['deployed', 'rfc9068'])(
  'access-token validation at the API, profile %s',
  (profile) => {
    const clock = manualClock();
    let mock: RunningMock;
    let token: string;
    beforeAll(async () => {
      mock = await startMock({
        signingKey: await sharedSigningKey(),
        profile,
        clients,
        clock: clock.now,
        tokenTtlSeconds: 60,
      });
      token = await tokenFor(mock);
    });
    afterAll(() => mock.close());

    const expectInvalid = async (authorization: string, description?: string) => {
      const answer = await getLoans(mock, authorization);
      expect(answer.status, authorization.slice(0, 40)).toBe(401);
      const challenge = answer.headers.get('www-authenticate') ?? '';
      expect(challenge).toMatch(/^Bearer error="invalid_token"/);
      if (description)
        expect(challenge).toBe(`Bearer error="invalid_token", error_description="${description}"`);
      expect(JSON.parse(answer.text).error).toBe('invalid_token');
    };
    const claims = () => decodeJwt(token);

    it('accepts its own token, with the scheme in any case', async () => {
      for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
        expect((await getLoans(mock, `${scheme} ${token}`)).status).toBe(200);
      }
      // RFC 9110 §11.4: the scheme and the token may be separated by several spaces or tabs.
      expect((await getLoans(mock, `Bearer\t${token}`)).status).toBe(200);
    });

    it('answers 401 with a challenge without error when no credentials were sent (RFC 6750 §3.1)', async () => {
      const answer = await getLoans(mock);
      expect(answer.status).toBe(401);
      expect(answer.headers.get('www-authenticate')).toBe('Bearer realm="partner-api"');
      expect(answer.headers.get('content-type')).toBe('application/json');
    });

    it('treats another scheme as no credentials', async () => {
      const answer = await getLoans(mock, `Basic ${token}`);
      expect(answer.status).toBe(401);
      expect(answer.headers.get('www-authenticate')).toBe('Bearer realm="partner-api"');
    });

    it('takes the token from the header only, never from the query string or body', async () => {
      const query = await getLoans(mock, undefined, undefined, `?access_token=${token}`);
      expect(query.status).toBe(401);
      expect(query.headers.get('www-authenticate')).toBe('Bearer realm="partner-api"');
      const body = await fetch(`${mock.baseUrl}/v3/partner/p-1/loan_draft`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `access_token=${token}`,
      });
      expect(body.status).toBe(401);
    });

    it('refuses a token sent by two methods with 400 invalid_request (RFC 6750 §2)', async () => {
      const answer = await getLoans(mock, `Bearer ${token}`, undefined, `?access_token=${token}`);
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.text).error).toBe('invalid_request');
    });

    it('refuses malformed tokens and headers with 401 invalid_token', async () => {
      await expectInvalid('Bearer', 'the Authorization header holds no well-formed bearer token');
      await expectInvalid('Bearer a b');
      await expectInvalid('Bearer not-a-jwt', 'the access token is not a compact JWS');
      await expectInvalid(`Bearer ${token}.extra`);
      await expectInvalid('Bearer e30.e30.');
    });

    it('refuses alg none, HS256 and any algorithm outside the allow-list', async () => {
      const { header, payload } = claims();
      await expectInvalid(
        `Bearer ${forge({ ...header, alg: 'none' }, payload)}`,
        'unsigned tokens (alg none) are not accepted',
      );
      await expectInvalid(`Bearer ${forge({ ...header, alg: 'NoNe' }, payload)}`);
      await expectInvalid(
        `Bearer ${forge({ ...header, alg: 'HS256' }, payload, 'c2ln')}`,
        'the token algorithm HS256 is not accepted (only RS256)',
      );
      await expectInvalid(`Bearer ${forge({ ...header, alg: 'PS256' }, payload, 'c2ln')}`);
    });

    it('refuses an unknown kid, a missing kid and a bad signature', async () => {
      const { header, payload } = claims();
      const signature = token.split('.')[2]!;
      await expectInvalid(
        `Bearer ${forge({ ...header, kid: 'other' }, payload, signature)}`,
        'the token kid is not a key of the JWKS',
      );
      const { kid: _, ...noKid } = header;
      await expectInvalid(`Bearer ${forge(noKid, payload, signature)}`);
      await expectInvalid(
        `Bearer ${forge(header, { ...payload, partnerId: 'p-2' }, signature)}`,
        'the token signature is invalid',
      );
    });

    it('refuses a token with a crit header (RFC 7515 §4.1.11)', async () => {
      const { header, payload } = claims();
      await expectInvalid(
        `Bearer ${forge({ ...header, crit: ['exp'] }, payload, token.split('.')[2])}`,
        'the token has a crit header this server does not understand',
      );
    });

    it('refuses a token signed by a foreign key, even with an embedded jwk or a jku', async () => {
      const { payload, header } = claims();
      const foreign = await signWithForeignKey(payload, { kid: header.kid, typ: header.typ });
      await expectInvalid(`Bearer ${foreign.token}`, 'the token signature is invalid');
      const embedded = await signWithForeignKey(payload, {
        typ: header.typ,
        jwk: (await signWithForeignKey({})).jwk,
      });
      await expectInvalid(`Bearer ${embedded.token}`);
      const jku = await signWithForeignKey(payload, { typ: header.typ, jku: 'http://127.0.0.1:9/jwks.json' });
      await expectInvalid(`Bearer ${jku.token}`);
    });

    it('refuses an expired token (exp, leeway 0) and accepts it one second before', async () => {
      const fresh = await tokenFor(mock);
      clock.advance(59);
      expect((await getLoans(mock, `Bearer ${fresh}`)).status).toBe(200);
      clock.advance(1);
      await expectInvalid(`Bearer ${fresh}`, 'the access token expired');
      clock.advance(-60);
    });

    it('answers 403 insufficient_scope naming the scope, before partner isolation', async () => {
      const readOnly = await tokenFor(mock, clients[0], 'create:loan_draft');
      const answer = await getLoans(mock, `Bearer ${readOnly}`, 'someone-else');
      expect(answer.status).toBe(403);
      expect(answer.headers.get('www-authenticate')).toBe(
        'Bearer error="insufficient_scope", scope="read:loans"',
      );
      expect(JSON.parse(answer.text)).toEqual({
        error: 'insufficient_scope',
        error_description: 'this operation requires the read:loans scope',
      });
    });

    it("answers 403 on another partner's path", async () => {
      const answer = await getLoans(mock, `Bearer ${token}`, 'p-other');
      expect(answer.status).toBe(403);
      expect(JSON.parse(answer.text).error).toBe('access_denied');
      expect(answer.headers.get('www-authenticate')).toBe('Bearer realm="partner-api"');
    });

    if (profile === 'rfc9068') {
      it('requires typ at+jwt (RFC 9068 §4)', async () => {
        const { header, payload } = claims();
        await expectInvalid(`Bearer ${forge({ ...header, typ: 'JWT' }, payload, token.split('.')[2])}`);
      });
    }
  },
);

describe('access-token: leeway and nbf', () => {
  it('accepts an expired token within leewaySeconds', async () => {
    const clock = manualClock();
    const mock = await startMock({
      signingKey: await sharedSigningKey(),
      clients,
      clock: clock.now,
      tokenTtlSeconds: 10,
      leewaySeconds: 5,
    });
    try {
      const token = await tokenFor(mock);
      clock.advance(14);
      expect((await getLoans(mock, `Bearer ${token}`)).status).toBe(200);
      clock.advance(1);
      expect((await getLoans(mock, `Bearer ${token}`)).status).toBe(401);
    } finally {
      await mock.close();
    }
  });

  it('accepts a token before its nbf within leewaySeconds, and not a second earlier', async () => {
    const clock = manualClock();
    const mock = await startMock({
      signingKey: await sharedSigningKey(),
      clients,
      clock: clock.now,
      leewaySeconds: 5,
    });
    try {
      const token = await tokenFor(mock); // nbf = iat = now
      clock.advance(-5);
      expect((await getLoans(mock, `Bearer ${token}`)).status).toBe(200);
      clock.advance(-1);
      const early = await getLoans(mock, `Bearer ${token}`);
      expect(early.status).toBe(401);
      expect(early.headers.get('www-authenticate')).toContain('the access token is not valid yet (nbf)');
    } finally {
      await mock.close();
    }
  });

  it('rfc9068: accepts typ at+jwt and application/at+jwt in any case, nothing else', async () => {
    const mock = await startMock({
      signingKey: await sharedSigningKey(),
      clients,
      profile: 'rfc9068',
      faults: ['api-skip-signature-check'],
    });
    try {
      const { header, payload } = decodeJwt(await tokenFor(mock));
      const withTyp = (typ: unknown) => `Bearer ${forge({ ...header, typ }, payload, 'c2ln')}`;
      for (const typ of ['at+jwt', 'AT+JWT', 'application/at+jwt', 'Application/AT+JWT'])
        expect([typ, (await getLoans(mock, withTyp(typ))).status]).toEqual([typ, 200]);
      for (const typ of ['JWT', 'at+jwt2', 'application/jwt', undefined, 7])
        expect([typ, (await getLoans(mock, withTyp(typ))).status]).toEqual([typ, 401]);
    } finally {
      await mock.close();
    }
  });

  it('refuses a token used before its nbf', async () => {
    const clock = manualClock();
    const mock = await startMock({
      signingKey: await sharedSigningKey(),
      clients,
      clock: clock.now,
      faults: ['api-skip-signature-check'],
    });
    try {
      const { header, payload } = decodeJwt(await tokenFor(mock));
      const future = forge(header, { ...payload, nbf: payload.iat + 30 }, 'c2ln');
      const answer = await getLoans(mock, `Bearer ${future}`);
      expect(answer.status).toBe(401);
      expect(answer.headers.get('www-authenticate')).toBe(
        'Bearer error="invalid_token", error_description="the access token is not valid yet (nbf)"',
      );
      clock.advance(30);
      expect((await getLoans(mock, `Bearer ${future}`)).status).toBe(200);
    } finally {
      await mock.close();
    }
  });

  it('checks iss and aud (shown with the signature check off, so claims can be edited)', async () => {
    const mock = await startMock({
      signingKey: await sharedSigningKey(),
      clients,
      faults: ['api-skip-signature-check'],
    });
    try {
      const { header, payload } = decodeJwt(await tokenFor(mock));
      const edit = (changes: Record<string, unknown>) =>
        `Bearer ${forge(header, { ...payload, ...changes }, 'c2ln')}`;
      expect((await getLoans(mock, edit({}))).status).toBe(200);
      const iss = await getLoans(mock, edit({ iss: mock.authUrl }));
      expect(iss.headers.get('www-authenticate')).toContain(
        'the token issuer is not this authentication service',
      );
      const aud = await getLoans(mock, edit({ aud: ['https://other.invalid'] }));
      expect(aud.headers.get('www-authenticate')).toContain('the token audience is not this API');
      expect((await getLoans(mock, edit({ aud: mock.audience }))).status).toBe(200);
      expect((await getLoans(mock, edit({ aud: ['x', mock.audience] }))).status).toBe(200);
      expect((await getLoans(mock, edit({ exp: undefined }))).status).toBe(401);
      expect((await getLoans(mock, edit({ partnerId: 7 }))).status).toBe(401);
      expect((await getLoans(mock, edit({ scope: { a: 1 } }))).status).toBe(401);
    } finally {
      await mock.close();
    }
  });
});

describe('access-token: robustness (property-based, in process)', () => {
  // The HTTP fuzz in mock-server.test.ts cannot get past the signature; here the claim checks are
  // reached too (with api-skip-signature-check), thousands of times without a socket per token.
  const issuer = 'http://127.0.0.1:1/';
  const audience = 'http://127.0.0.1:2';
  const now = Date.UTC(2026, 0, 1);
  const claimValue = fc.oneof(
    fc.jsonValue({ maxDepth: 2 }),
    // Values that pass a check, so that the later checks are reached as well.
    fc.constantFrom('RS256', 'none', 'HS256', 'at+jwt', 'read:loans', issuer, audience, [audience], 'p-1'),
    fc.constantFrom(now / 1000 - 10, now / 1000 + 10, ['read:loans', 7], ['read:loans']),
    fc.double(),
  );
  // Valid-looking header and claims with a few of their fields replaced by arbitrary values (or
  // removed), so that every check, not only the first, meets malformed input.
  const damaged = (valid: Record<string, unknown>, keys: string[]) =>
    fc
      .dictionary(fc.constantFrom(...keys), fc.option(claimValue, { nil: undefined }), { maxKeys: 3 })
      .map((changes) => JSON.parse(JSON.stringify({ ...valid, ...changes })) as Record<string, unknown>);
  const token = (profile: Profile) =>
    fc.oneof(
      fc
        .tuple(
          damaged({ alg: 'RS256', kid: 'k', ...(profile === 'rfc9068' && { typ: 'at+jwt' }) }, [
            'alg',
            'kid',
            'typ',
            'jwk',
            'jku',
            'crit',
            'x',
          ]),
          damaged(
            {
              iss: issuer,
              aud: profile === 'rfc9068' ? audience : [audience],
              exp: now / 1000 + 10,
              nbf: now / 1000 - 10,
              scope: profile === 'rfc9068' ? 'read:loans' : ['read:loans'],
              partnerId: 'p-1',
            },
            ['iss', 'aud', 'exp', 'nbf', 'iat', 'scope', 'partnerId', 'client_id', 'x'],
          ),
          fc.string({ maxLength: 12 }),
        )
        .map(([h, p, signature]) => forge(h, p, Buffer.from(signature).toString('base64url'))),
      fc.string({ maxLength: 60 }),
      fc.array(fc.base64String({ maxLength: 16 }), { maxLength: 5 }).map((parts) => parts.join('.')),
    );

  it.each<[Profile, FaultName[]]>([
    ['deployed', []],
    ['deployed', ['api-skip-signature-check']],
    ['rfc9068', []],
    ['rfc9068', ['api-skip-signature-check']],
  ])(
    'never throws on a malformed token, and accepts none without a valid signature (%s, faults %j)',
    async (profile, faults) => {
      const context: ValidatorContext = {
        keys: await KeySet.create(await sharedSigningKey()),
        issuer,
        audience,
        profile,
        clock: () => now,
        leewaySeconds: 0,
        faults: new Set(faults),
      };
      await fc.assert(
        fc.asyncProperty(token(profile), async (candidate) => {
          const result = await validateAccessToken(candidate, context);
          if (faults.length === 0) expect(result.valid).toBe(false);
          if (result.valid) {
            expect(typeof result.claims.partnerId).toBe('string');
            expect(result.claims.scopes.every((scope) => typeof scope === 'string')).toBe(true);
          }
        }),
        { numRuns: 1500 },
      );
    },
  );
});

describe('access-token: the verification cache', () => {
  const audience = 'http://127.0.0.1:1';
  const issuer = 'http://127.0.0.1:2/';
  const now = Date.UTC(2026, 0, 1);

  async function setup(faults: FaultName[] = []) {
    const keys = await KeySet.create(await sharedSigningKey());
    const verified = new BoundedCache<string, VerifiedToken>(10);
    let time = now;
    const context: ValidatorContext = {
      keys,
      issuer,
      audience,
      profile: 'deployed',
      clock: () => time,
      leewaySeconds: 0,
      faults: new Set(faults),
      verified,
    };
    const iat = Math.floor(now / 1000);
    const claims = {
      iss: issuer,
      aud: [audience],
      iat,
      nbf: iat,
      exp: iat + 60,
      partnerId: 'p-1',
      scope: [],
    };
    const sign = (payload: Record<string, unknown>) =>
      new SignJWT(payload)
        .setProtectedHeader({ alg: 'RS256', kid: keys.signing.kid, typ: 'JWT' })
        .sign(keys.signing.privateKey);
    return { context, verified, keys, claims, sign, setTime: (ms: number) => (time = ms) };
  }

  it('keeps a token whose signature verified, and uses the kept result next time', async () => {
    const { context, verified, claims, sign, keys } = await setup();
    const token = await sign(claims);
    expect((await validateAccessToken(token, context)).valid).toBe(true);
    expect(verified.size).toBe(1);
    // Proof that the kept result is what is used: a string never signed, planted as verified, passes.
    verified.set('planted', { header: { kid: keys.signing.kid }, payload: claims, kid: keys.signing.kid });
    expect((await validateAccessToken('planted', context)).valid).toBe(true);
  });

  it('still checks exp, nbf, iss and aud of a kept token on every request', async () => {
    const { context, verified, claims, sign, setTime } = await setup();
    const token = await sign(claims);
    expect((await validateAccessToken(token, context)).valid).toBe(true);
    setTime(now + 60_000);
    expect(await validateAccessToken(token, context)).toMatchObject({
      description: 'the access token expired',
    });
    setTime(now - 1000);
    expect(await validateAccessToken(token, context)).toMatchObject({
      description: 'the access token is not valid yet (nbf)',
    });
    expect(verified.size).toBe(1);
    const foreign = { ...claims, aud: ['http://elsewhere'] };
    setTime(now);
    const other = await sign(foreign);
    expect(await validateAccessToken(other, context)).toMatchObject({
      description: 'the token audience is not this API',
    });
    expect(await validateAccessToken(other, context)).toMatchObject({
      description: 'the token audience is not this API',
    });
  });

  it('keeps no token whose signature failed, and drops a kept result once its key is retired', async () => {
    const { context, verified, claims, sign, keys } = await setup();
    const token = await sign(claims);
    const tampered = `${token.slice(0, token.lastIndexOf('.') + 1)}${'A'.repeat(342)}`;
    expect((await validateAccessToken(tampered, context)).valid).toBe(false);
    expect(verified.size).toBe(0);
    expect((await validateAccessToken(token, context)).valid).toBe(true);
    await keys.rotate({ retirePrevious: true });
    expect(await validateAccessToken(token, context)).toMatchObject({
      valid: false,
      description: 'the token kid is not a key of the JWKS',
    });
  });

  it('is not used at all under a fault (a fault changes what verification means)', async () => {
    const { context, verified, claims, sign, keys } = await setup(['api-ignore-scope']);
    expect((await validateAccessToken(await sign(claims), context)).valid).toBe(true);
    expect(verified.size).toBe(0);
    verified.set('planted', { header: { kid: keys.signing.kid }, payload: claims, kid: keys.signing.kid });
    expect((await validateAccessToken('planted', context)).valid).toBe(false);
  });
});
