import { compactVerify, exportJWK, exportSPKI, generateKeyPair, importJWK, jwtVerify, SignJWT } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt } from '../../../src/common/jwt.js';
import {
  algNoneToken,
  embeddedJwkToken,
  hs256PublicKeyTokens,
  noneCasings,
  tamperedPayloadToken,
  unknownKeyToken,
} from '../../../src/server/forgery/token-forger.js';

let token: string;
let jwks: { keys: Array<Record<string, unknown>> };
let publicKey: CryptoKey;

beforeAll(async () => {
  const pair = await generateKeyPair('RS256', { extractable: true });
  publicKey = pair.publicKey;
  jwks = { keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256' }] };
  token = await new SignJWT({ scope: ['read:loans'], partnerId: 'p1', exp: 4102444800 })
    .setProtectedHeader({ alg: 'RS256', kid: 'k1', typ: 'JWT' })
    .sign(pair.privateKey);
});

describe('token-forger: each token differs from the valid one in one way', () => {
  it('alg none: same claims, no signature, every casing', () => {
    for (const casing of noneCasings) {
      const forged = algNoneToken(token, casing);
      expect(forged.endsWith('.')).toBe(true);
      expect(decodeJwt(forged)).toMatchObject({
        header: { alg: casing, typ: 'JWT' },
        payload: decodeJwt(token)!.payload,
      });
    }
  });

  it('tampered payload: the original signature no longer verifies', async () => {
    const forged = tamperedPayloadToken(token, ['read:loans', 'create:repayment']);
    expect(forged.split('.')[2]).toBe(token.split('.')[2]);
    expect(decodeJwt(forged)!.payload.scope).toEqual(['read:loans', 'create:repayment']);
    await expect(compactVerify(forged, publicKey)).rejects.toThrow();
    await expect(compactVerify(token, publicKey)).resolves.toBeDefined();
  });

  it('HS256 with the PEM of the published key verifies with that PEM as HMAC secret', async () => {
    const [forged] = await hs256PublicKeyTokens(token, jwks as never);
    const pem = await exportSPKI((await importJWK(jwks.keys[0] as never, 'RS256')) as CryptoKey);
    const { payload, protectedHeader } = await jwtVerify(forged!, new TextEncoder().encode(pem));
    expect(protectedHeader).toMatchObject({ alg: 'HS256', kid: 'k1' });
    expect(payload.partnerId).toBe('p1');
  });

  it('unknown key, embedded jwk and jku: signed by the attacker, not by the server key', async () => {
    const unknown = await unknownKeyToken(token);
    expect(decodeJwt(unknown)!.header.kid).toMatch(/^conformance-unknown-/);
    await expect(compactVerify(unknown, publicKey)).rejects.toThrow();

    const embedded = await embeddedJwkToken(token);
    const header = decodeJwt(embedded)!.header;
    expect(header.kid).toBeUndefined();
    // The embedded key is the attacker's, and verifies the token: exactly what a server must not trust.
    await expect(
      compactVerify(embedded, await importJWK(header.jwk as never, 'RS256')),
    ).resolves.toBeDefined();
    await expect(compactVerify(embedded, publicKey)).rejects.toThrow();
  });
});
