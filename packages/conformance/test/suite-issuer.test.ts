import { compactVerify, createLocalJWKSet, generateKeyPair, decodeJwt as joseDecode, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { decodeJwt } from '../src/jwt.js';
import { SuiteIssuer } from '../src/suite-issuer.js';

describe('SuiteIssuer', () => {
  it('serves RFC 8414/OpenID metadata and a JWKS whose key verifies the tokens it makes; records fetches', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    const valid = await new SignJWT({ scope: ['read:loans'], partnerId: 'p1' })
      .setProtectedHeader({ alg: 'RS256', kid: 'server-key', typ: 'JWT' })
      .setIssuer('https://auth.example/')
      .setAudience(['https://api.example'])
      .setExpirationTime('1h')
      .sign(privateKey);
    const issuer = await SuiteIssuer.start();
    try {
      const since = Date.now();
      for (const doc of ['openid-configuration', 'oauth-authorization-server']) {
        const meta = await (await fetch(`${issuer.url}/.well-known/${doc}`)).json();
        expect(meta).toMatchObject({ issuer: issuer.url, jwks_uri: issuer.jwksUrl });
      }
      const jwks = await (await fetch(issuer.jwksUrl)).json();
      expect(issuer.keyFetchesSince(since).map((hit) => hit.path)).toEqual([
        '/.well-known/openid-configuration',
        '/.well-known/oauth-authorization-server',
        '/.well-known/jwks.json',
      ]);

      const foreign = await issuer.foreignIssuerToken(valid);
      expect(joseDecode(foreign)).toEqual({ ...joseDecode(valid), iss: `${issuer.url}/` });
      expect(decodeJwt(foreign)!.header).toMatchObject({ alg: 'RS256', kid: issuer.kid, typ: 'JWT' });
      await expect(compactVerify(foreign, createLocalJWKSet(jwks))).resolves.toBeDefined();

      const jku = await issuer.jkuToken(valid);
      expect(joseDecode(jku)).toEqual(joseDecode(valid));
      expect(decodeJwt(jku)!.header).toMatchObject({ jku: issuer.jwksUrl, kid: issuer.kid });
      await expect(compactVerify(jku, createLocalJWKSet(jwks))).resolves.toBeDefined();
    } finally {
      await issuer.close();
    }
  });
});
