import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningMock, startMock } from '../src/index.js';
import { decodeJwt, getLoans, sharedSigningKey, tokenFor } from './helpers.js';

let mock: RunningMock;
beforeAll(async () => {
  mock = await startMock({ signingKey: await sharedSigningKey() });
});
afterAll(() => mock.close());

describe('auth-server: JWKS', () => {
  it('publishes the signing key as a JWKS with kid, alg and use, and no private part', async () => {
    const response = await fetch(mock.jwksUrl);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    const { keys } = (await response.json()) as { keys: Record<string, string>[] };
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig', kid: expect.any(String) });
    expect(Object.keys(keys[0]!).sort()).toEqual(['alg', 'e', 'kid', 'kty', 'n', 'use']);
    expect(decodeJwt(await tokenFor(mock)).header.kid).toBe(keys[0]!.kid);
  });

  it('rotates keys without restart: new tokens use the new key, old tokens stay valid for one rotation', async () => {
    const rotating = await startMock({ signingKey: await sharedSigningKey() });
    try {
      const before = await tokenFor(rotating);
      await rotating.rotateKeys();
      const after = await tokenFor(rotating);
      const { keys } = (await (await fetch(rotating.jwksUrl)).json()) as { keys: { kid: string }[] };
      expect(keys.map((key) => key.kid)).toEqual([decodeJwt(after).header.kid, decodeJwt(before).header.kid]);
      expect((await getLoans(rotating, `Bearer ${before}`)).status).toBe(200);
      expect((await getLoans(rotating, `Bearer ${after}`)).status).toBe(200);
      await rotating.rotateKeys();
      const old = await getLoans(rotating, `Bearer ${before}`);
      expect(old.status).toBe(401);
      expect(old.headers.get('www-authenticate')).toContain('the token kid is not a key of the JWKS');
      expect((await getLoans(rotating, `Bearer ${after}`)).status).toBe(200);
      await rotating.rotateKeys({ retirePrevious: true });
      expect((await getLoans(rotating, `Bearer ${after}`)).status).toBe(401);
      const jwks = (await (await fetch(rotating.jwksUrl)).json()) as { keys: unknown[] };
      expect(jwks.keys).toHaveLength(1);
    } finally {
      await rotating.close();
    }
  });
});

describe('auth-server: routes', () => {
  it('answers 405 with Allow for a wrong method on the token endpoint and the JWKS', async () => {
    const token = await fetch(mock.tokenUrl);
    expect(token.status).toBe(405);
    expect(token.headers.get('allow')).toBe('POST');
    const jwks = await fetch(mock.jwksUrl, { method: 'POST', body: '' });
    expect(jwks.status).toBe(405);
    expect(jwks.headers.get('allow')).toBe('GET');
  });

  it('answers 404 JSON for other paths, including the API paths', async () => {
    for (const path of ['/', '/oauth/token/', '/v3/partner/p/loans', '/.well-known/openid-configuration']) {
      const response = await fetch(`${mock.authUrl}${path}`);
      expect(response.status, path).toBe(404);
      expect(((await response.json()) as { error: string }).error).toBe('not_found');
    }
  });
});

describe('auth-server: body size', () => {
  it('answers 400 invalid_request to a token request body over 1 MiB, and serves one of exactly 1 MiB', async () => {
    const client = mock.clients[0]!;
    const fields = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: client.clientId,
      client_secret: client.clientSecret,
    }).toString();
    const padded = (size: number) => `${fields}&x=${'a'.repeat(size - fields.length - 3)}`;
    const post = (body: string) =>
      fetch(mock.tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body,
      });
    const over = await post(padded(1024 * 1024 + 1));
    expect(over.status).toBe(400);
    expect(await over.json()).toEqual({
      error: 'invalid_request',
      error_description: 'the body is larger than 1 MiB',
    });
    expect((await post(padded(1024 * 1024))).status).toBe(200);
  });
});
