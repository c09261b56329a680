import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { toAccessToken } from '../src/access-token.js';

const jwt = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlLXZhbHVlLTEyMzQ1Ng';

describe('toAccessToken', () => {
  const token = toAccessToken({
    accessToken: jwt,
    tokenType: 'Bearer',
    expiresAt: 1,
    grantedScopes: ['read:loans'],
    partnerId: 'p',
    issuer: 'i',
    jti: 'j',
  });

  it('keeps the token readable as a property', () => {
    expect(token.accessToken).toBe(jwt);
    expect(Object.isFrozen(token)).toBe(true);
  });

  it('shows only the last 6 characters to JSON.stringify and util.inspect', () => {
    expect(JSON.parse(JSON.stringify(token))).toEqual({
      accessToken: `…${jwt.slice(-6)}`,
      tokenType: 'Bearer',
      expiresAt: 1,
      grantedScopes: ['read:loans'],
      partnerId: 'p',
      issuer: 'i',
      jti: 'j',
    });
    expect(inspect(token, { depth: 5 })).not.toContain(jwt);
    expect(inspect(token)).toContain(`…${jwt.slice(-6)}`);
    expect(inspect({ nested: { token } }, { depth: 5 })).not.toContain(jwt);
  });
});
