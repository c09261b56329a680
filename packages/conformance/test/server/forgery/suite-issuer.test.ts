import { compactVerify, createLocalJWKSet, generateKeyPair, decodeJwt as joseDecode, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { decodeJwt } from '../../../src/common/jwt.js';
import { SuiteIssuer } from '../../../src/server/forgery/suite-issuer.js';

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
      const base = `${issuer.url}/foreign-issuer`;
      const oidc = await (await fetch(`${base}/.well-known/openid-configuration`)).json();
      const rfc8414 = await (
        await fetch(`${issuer.url}/.well-known/oauth-authorization-server/foreign-issuer`)
      ).json();
      for (const meta of [oidc, rfc8414])
        expect(meta).toMatchObject({ issuer: base, jwks_uri: `${base}/.well-known/jwks.json` });
      const jwks = await (await fetch(oidc.jwks_uri)).json();
      expect(issuer.fetchesOf('foreign-issuer').map((hit) => hit.path)).toEqual([
        '/foreign-issuer/.well-known/openid-configuration',
        '/.well-known/oauth-authorization-server/foreign-issuer',
        '/foreign-issuer/.well-known/jwks.json',
      ]);
      expect(issuer.fetchesOf('jku')).toEqual([]);

      const foreign = await issuer.foreignIssuerToken(valid);
      expect(joseDecode(foreign)).toEqual({ ...joseDecode(valid), iss: `${base}/` });
      expect(decodeJwt(foreign)!.header).toMatchObject({ alg: 'RS256', kid: issuer.kid, typ: 'JWT' });
      await expect(compactVerify(foreign, createLocalJWKSet(jwks))).resolves.toBeDefined();

      const jku = await issuer.jkuToken(valid);
      expect(joseDecode(jku)).toEqual(joseDecode(valid));
      expect(decodeJwt(jku)!.header).toMatchObject({
        jku: `${issuer.url}/jku/.well-known/jwks.json`,
        kid: issuer.kid,
      });
      await expect(compactVerify(jku, createLocalJWKSet(jwks))).resolves.toBeDefined();
    } finally {
      await issuer.close();
    }
  });
});
