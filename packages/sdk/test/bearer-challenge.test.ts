import { describe, expect, it } from 'vitest';
import { bearerChallengeOf, parseWwwAuthenticate } from '../src/bearer-challenge.js';

describe('parseWwwAuthenticate', () => {
  it('reads an RFC 6750 §3 Bearer challenge with quoted params', () => {
    expect(
      parseWwwAuthenticate(
        'Bearer realm="partner-api", error="insufficient_scope", error_description="needs \\"create:repayment\\"", scope="create:repayment"',
      ),
    ).toEqual([
      {
        scheme: 'Bearer',
        params: {
          realm: 'partner-api',
          error: 'insufficient_scope',
          error_description: 'needs "create:repayment"',
          scope: 'create:repayment',
        },
      },
    ]);
  });

  it('reads several challenges, token68 and unquoted values, and lower-cases param names', () => {
    expect(
      parseWwwAuthenticate('Basic dXNlcg==, Bearer ERROR=invalid_token,  realm="a, b"  , DPoP algs="ES256"'),
    ).toEqual([
      { scheme: 'Basic', params: {}, token68: 'dXNlcg==' },
      { scheme: 'Bearer', params: { error: 'invalid_token', realm: 'a, b' } },
      { scheme: 'DPoP', params: { algs: 'ES256' } },
    ]);
  });

  it('accepts a bare scheme and keeps what it read before a malformed tail', () => {
    expect(parseWwwAuthenticate('Bearer')).toEqual([{ scheme: 'Bearer', params: {} }]);
    expect(parseWwwAuthenticate('Bearer error="invalid_token", "oops')).toEqual([
      { scheme: 'Bearer', params: { error: 'invalid_token' } },
    ]);
    expect(parseWwwAuthenticate('')).toEqual([]);
  });

  it('finds the Bearer challenge whatever the case of the scheme', () => {
    expect(bearerChallengeOf('Basic realm="x", bearer error="invalid_token"')?.params).toEqual({
      error: 'invalid_token',
    });
    expect(bearerChallengeOf('Basic realm="x"')).toBeUndefined();
    expect(bearerChallengeOf(null)).toBeUndefined();
  });
});
