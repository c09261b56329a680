import { describe, expect, it } from 'vitest';
import { audiencesOfClaim, base64url, decodeJwt, sameUrl, scopesOfClaim } from '../../src/common/jwt.js';

describe('jwt', () => {
  it('decodes a compact JWS without verifying it', () => {
    const token = `${base64url('{"alg":"RS256"}')}.${base64url('{"sub":"x"}')}.sig`;
    expect(decodeJwt(token)).toMatchObject({ header: { alg: 'RS256' }, payload: { sub: 'x' } });
    expect(decodeJwt('a.b')).toBeUndefined();
    expect(decodeJwt('not.json.here')).toBeUndefined();
  });

  it('reads scope and aud claims as string or array (deployed and RFC 9068 shapes)', () => {
    expect(scopesOfClaim('read:loans  create:repayment')).toEqual(['read:loans', 'create:repayment']);
    expect(scopesOfClaim(['read:loans'])).toEqual(['read:loans']);
    expect(scopesOfClaim([1])).toBeUndefined();
    expect(audiencesOfClaim('https://api')).toEqual(['https://api']);
    expect(audiencesOfClaim(['https://api', 'x'])).toEqual(['https://api', 'x']);
    expect(audiencesOfClaim(3)).toBeUndefined();
  });

  it('compares URLs up to a trailing slash (the deployed iss)', () => {
    expect(sameUrl('https://auth/', 'https://auth')).toBe(true);
    expect(sameUrl('https://auth/other', 'https://auth')).toBe(false);
  });
});
