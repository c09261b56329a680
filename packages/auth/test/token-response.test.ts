import { SignJWT } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TokenResponseError } from '../src/errors.js';
import { processTokenResponse } from '../src/token-response.js';
import { providerFor } from './support/provider.js';
import { type Handler, startTokenServer, type TokenServer } from './support/token-server.js';

let server: TokenServer;
beforeAll(async () => {
  server = await startTokenServer();
});
afterAll(() => server.close());
afterEach(() => {
  server.requests.length = 0;
});

const CHECK = 'check that authUrl/tokenUrl points at the partner auth service.';

async function failure(handler: Handler, options: Parameters<typeof providerFor>[1] = {}): Promise<Error> {
  server.next(handler);
  const error = await providerFor(server, { retry: { maxAttempts: 1 }, ...options })
    .getToken()
    .catch((e: unknown) => e);
  expect(error).toBeInstanceOf(TokenResponseError);
  expect(error).toMatchObject({ code: 'ERR_TOKEN_RESPONSE' });
  return error as Error;
}

const tweak =
  (o: Parameters<Parameters<Handler>[1]>[0]): Handler =>
  async (_r, issue) => ({ body: await issue(o) });

describe('malformed token responses → TokenResponseError saying what was wrong', () => {
  it('an HTML page', async () => {
    const error = await failure(() => ({
      headers: { 'content-type': 'text/html; charset=utf-8' },
      body: '<!doctype html><title>Sign in</title>',
    }));
    expect(error.message).toBe(
      `the token endpoint answered 200 with Content-Type "text/html; charset=utf-8" (an HTML page, e.g. a proxy or login page) instead of a JSON token response (RFC 6749 §5.1); ${CHECK}`,
    );
  });

  it('a body that is not JSON', async () => {
    const error = await failure(() => ({
      headers: { 'content-type': 'application/json' },
      body: '<html>oops',
    }));
    expect(error.message).toBe(`the token response is not JSON (it looks like HTML) (10 bytes); ${CHECK}`);
  });

  it('a body over 1 MiB, with or without Content-Length', async () => {
    const huge = JSON.stringify({ padding: 'x'.repeat(1024 * 1024) });
    const declared = await failure(() => ({ headers: { 'content-type': 'application/json' }, body: huge }));
    expect(declared.message).toBe(
      'the token response is larger than 1 MiB; a token response is a small JSON object: check that authUrl/tokenUrl points at the token endpoint.',
    );
    const chunked = await failure(() => ({
      headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      body: huge,
    }));
    expect(chunked.message).toContain('larger than 1 MiB');
  });

  it('a JSON value that is not an object', async () => {
    expect((await failure(() => ({ body: [1, 2] }))).message).toBe(
      `the token response is an array; expected a JSON object; ${CHECK}`,
    );
  });

  it.each([
    ['missing access_token', { omitFields: ['access_token'] }, 'has no usable "access_token" (missing)'],
    ['empty access_token', { response: { access_token: '' } }, 'has no usable "access_token" (empty)'],
    ['numeric access_token', { response: { access_token: 42 } }, 'has no usable "access_token" (number)'],
    ['token_type mac', { response: { token_type: 'mac' } }, 'has token_type "mac"; only Bearer tokens'],
    [
      'missing token_type',
      { omitFields: ['token_type'] },
      'field "token_type" is undefined; expected "Bearer"',
    ],
    [
      'expires_in missing',
      { omitFields: ['expires_in'] },
      '"expires_in" is undefined; expected a positive integer',
    ],
    [
      'expires_in 0',
      { response: { expires_in: 0 } },
      '"expires_in" is number 0; expected a positive integer',
    ],
    ['expires_in 1.5', { response: { expires_in: 1.5 } }, '"expires_in" is number 1.5'],
    ['expires_in "soon"', { response: { expires_in: 'soon' } }, '"expires_in" is the string "soon"'],
    [
      'scope an array',
      { response: { scope: ['read:loans'] } },
      'field "scope" is an array; expected a space-separated string',
    ],
    [
      'partnerId a number',
      { response: { partnerId: 7 } },
      'field "partnerId" is number 7; expected a non-empty string',
    ],
    [
      'access_token not a JWT',
      { response: { access_token: 'opaque-token-value-abcdef' } },
      'the access_token is not a decodable JWT',
    ],
    ['no exp claim', { omitClaims: ['exp'] }, 'the JWT has no numeric "exp" claim'],
    [
      'exp in the past',
      { claims: { exp: 1_000_000 } },
      'the JWT "exp" claim (1970-01-12T13:46:40.000Z) has already passed',
    ],
    [
      'aud a number',
      { claims: { aud: 5 } },
      'the JWT "aud" claim is number 5; expected a string or an array of strings',
    ],
    [
      'scope claim an object',
      { claims: { scope: { a: 1 } } },
      'the JWT "scope" claim is object; expected a space-separated string',
    ],
    [
      'scope claim differs',
      { claims: { scope: ['read:loans', 'create:repayment'] } },
      'but the JWT "scope" claim says "create:repayment read:loans"',
    ],
    [
      'iss differs',
      { response: { iss: 'https://evil.example/' } },
      'the response iss "https://evil.example/" differs from the JWT "iss" claim',
    ],
    [
      'no partnerId anywhere',
      { omitFields: ['partnerId'], omitClaims: ['partnerId'] },
      'neither the token response nor the JWT carries a "partnerId"',
    ],
    ['no jti anywhere', { omitFields: ['jti'], omitClaims: ['jti'] }, 'carries a token id ("jti")'],
  ] as const)('%s', async (_name, overrides, expected) => {
    const error = await failure(tweak(overrides as Parameters<typeof tweak>[0]), {
      scopes: ['read:loans'],
    });
    expect(error.message).toContain(expected);
  });

  it('an aud claim without the requested audience, with a clear message', async () => {
    const error = await failure(tweak({ claims: { aud: ['https://other-api.example'] } }));
    expect(error.message).toBe(
      `the JWT "aud" claim ("https://other-api.example") does not contain the requested audience "${server.audience}"; the API would refuse this token: check the audience option (the partner API base URL).`,
    );
  });

  it('a partnerId claim that differs from the response', async () => {
    const error = await failure(tweak({ claims: { partnerId: 'partner-999' } }));
    expect(error.message).toBe(
      'the response partnerId "partner-123" differs from the JWT "partnerId" claim "partner-999"; the API paths would name the wrong partner: report this to the auth service operator.',
    );
  });
});

describe('shapes that must be accepted', () => {
  it.each([
    ['token_type BEARER', { response: { token_type: 'BEARER' } }],
    ['token_type Bearer', { response: { token_type: 'Bearer' } }],
    ['expires_in as a numeric string', { response: { expires_in: '3599' } }],
    ['aud as a string', { claims: { aud: 'https://partner-api.example' } }],
    [
      'aud as an array with other audiences',
      { claims: { aud: ['https://x.example', 'https://partner-api.example'] } },
    ],
    ['aud with a trailing slash', { claims: { aud: 'https://partner-api.example/' } }],
    ['scope claim as a string (RFC 9068)', { claims: { scope: 'read:loans' } }],
    ['no scope claim', { omitClaims: ['scope'] }],
    ['partnerId only in the JWT', { omitFields: ['partnerId'] }],
    ['iss and jti only in the JWT', { omitFields: ['iss', 'jti'] }],
  ] as const)('%s', async (_name, overrides) => {
    server.next(tweak(overrides as Parameters<typeof tweak>[0]));
    const token = await providerFor(server).getToken({ scopes: ['read:loans'] });
    expect(token).toMatchObject({
      tokenType: 'Bearer',
      partnerId: 'partner-123',
      grantedScopes: ['read:loans'],
    });
    expect(token.issuer).toBe(server.issuer);
  });

  it('takes the granted scopes from the claim, then from the request, when the response has no scope', async () => {
    server.next(tweak({ omitFields: ['scope'] }));
    expect((await providerFor(server).getToken({ scopes: ['read:loans'] })).grantedScopes).toEqual([
      'read:loans',
    ]);
    server.next(tweak({ omitFields: ['scope'], omitClaims: ['scope'] }));
    expect((await providerFor(server).getToken({ scopes: ['create:repayment'] })).grantedScopes).toEqual([
      'create:repayment',
    ]);
  });
});

describe('processTokenResponse', () => {
  it('computes expiresAt = min(request start + expires_in, exp)', async () => {
    const exp = 2_000_000_000;
    const jwt = await new SignJWT({ aud: 'a', iss: 'i', partnerId: 'p', jti: 'j', exp })
      .setProtectedHeader({ alg: 'HS256' })
      .sign(new Uint8Array(32));
    const respond = (expiresIn: number) =>
      new Response(JSON.stringify({ access_token: jwt, token_type: 'bearer', expires_in: expiresIn }), {
        headers: { 'content-type': 'application/json' },
      });
    const ctx = {
      requestedAt: exp * 1000 - 100_000,
      now: exp * 1000 - 99_000,
      audience: 'a',
      requestedScopes: [],
      clockSkewMs: 0,
    };
    expect((await processTokenResponse(respond(50), ctx)).expiresAt).toBe(exp * 1000 - 50_000);
    expect((await processTokenResponse(respond(500), ctx)).expiresAt).toBe(exp * 1000);
  });
});

describe('signature verification (verify option)', () => {
  it('accepts ES256 and RS256 tokens that verify against the JWKS URL, and checks the issuer', async () => {
    const verify = { jwksUrl: server.jwksUrl, issuer: server.issuer };
    await expect(providerFor(server, { verify }).getToken()).resolves.toMatchObject({ tokenType: 'Bearer' });
    server.next(tweak({ alg: 'RS256' }));
    await expect(providerFor(server, { verify }).getToken()).resolves.toMatchObject({ tokenType: 'Bearer' });
  });

  it('fetches the JWKS through the injected fetch', async () => {
    const fetched: string[] = [];
    const fetch: typeof globalThis.fetch = (input, init) => {
      fetched.push(input instanceof Request ? input.url : String(input));
      return globalThis.fetch(input, init);
    };
    await expect(
      providerFor(server, { fetch, verify: { jwksUrl: server.jwksUrl } }).getToken(),
    ).resolves.toMatchObject({ tokenType: 'Bearer' });
    expect(fetched).toEqual([server.tokenUrl, server.jwksUrl]);
  });

  it('accepts a JWKS given inline', async () => {
    await expect(providerFor(server, { verify: { jwks: server.jwks } }).getToken()).resolves.toMatchObject({
      tokenType: 'Bearer',
    });
  });

  it('refuses HS256 (not in the RS256/PS256/ES256 allow-list)', async () => {
    const error = await failure(tweak({ alg: 'HS256' }), { verify: { jwksUrl: server.jwksUrl } });
    expect(error.message).toMatch(
      /^the access_token signature or claims did not verify \(ERR_JOSE_ALG_NOT_ALLOWED: /,
    );
    expect(error.message).toContain(
      'check verify.jwksUrl/verify.jwks and verify.issuer against the auth service.',
    );
  });

  it('refuses an unsigned alg "none" token', async () => {
    const error = await failure(
      async (_r, issue) => {
        const body = await issue();
        const [, payload] = String(body.access_token).split('.');
        const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
        return { body: { ...body, access_token: `${header}.${payload}.` } };
      },
      { verify: { jwksUrl: server.jwksUrl } },
    );
    expect(error.message).toContain('did not verify');
  });

  it('refuses a token whose signature does not match', async () => {
    const error = await failure(
      async (_r, issue) => {
        const body = await issue();
        const [h, , s] = String(body.access_token).split('.');
        const forged = Buffer.from(
          JSON.stringify({ aud: [server.audience], exp: 4_000_000_000, partnerId: 'x' }),
        ).toString('base64url');
        return { body: { ...body, access_token: `${h}.${forged}.${s}` } };
      },
      { verify: { jwksUrl: server.jwksUrl } },
    );
    expect(error.message).toContain('ERR_JWS_SIGNATURE_VERIFICATION_FAILED');
  });

  it('refuses a token from another issuer', async () => {
    const error = await failure(tweak({}), {
      verify: { jwks: server.jwks, issuer: 'https://other-issuer.example/' },
    });
    expect(error.message).toContain('ERR_JWT_CLAIM_VALIDATION_FAILED');
  });

  it('needs exactly one of jwksUrl and jwks', () => {
    expect(() => providerFor(server, { verify: {} })).toThrow(
      'createTokenProvider: verify needs exactly one of jwksUrl (the JWKS address) or jwks (the key set).',
    );
  });
});
