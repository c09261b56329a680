import { describe, expect, it } from 'vitest';
import { findBearerChallenge, parseWwwAuthenticate } from '../src/bearer-challenge.js';
import { ConfigurationError } from '../src/errors.js';

describe('parseWwwAuthenticate (RFC 9110 §11.6.1)', () => {
  it('parses a Bearer challenge with quoted and token values, lowercasing parameter names', () => {
    expect(
      parseWwwAuthenticate(
        'Bearer realm="partner-api", Error="invalid_token", error_description="The token expired"',
      ),
    ).toEqual([
      {
        scheme: 'Bearer',
        params: { realm: 'partner-api', error: 'invalid_token', error_description: 'The token expired' },
      },
    ]);
    expect(
      parseWwwAuthenticate('Bearer error=insufficient_scope, scope="read:loans create:repayment"'),
    ).toEqual([
      { scheme: 'Bearer', params: { error: 'insufficient_scope', scope: 'read:loans create:repayment' } },
    ]);
  });

  it('unescapes quoted-pairs and keeps commas and equals signs inside quoted strings', () => {
    expect(parseWwwAuthenticate('Bearer error_description="say \\"hi\\", a=b \\\\ done"')).toEqual([
      { scheme: 'Bearer', params: { error_description: 'say "hi", a=b \\ done' } },
    ]);
  });

  it('parses several challenges in one header, including token68 and bare schemes', () => {
    expect(
      parseWwwAuthenticate(
        'Newauth realm="apps", type=1, title="Login to \\"apps\\"", Basic realm="simple", Negotiate abc+/def==, Bearer',
      ),
    ).toEqual([
      { scheme: 'Newauth', params: { realm: 'apps', type: '1', title: 'Login to "apps"' } },
      { scheme: 'Basic', params: { realm: 'simple' } },
      { scheme: 'Negotiate', params: {}, token68: 'abc+/def==' },
      { scheme: 'Bearer', params: {} },
    ]);
  });

  it('reads a lone name= after the scheme as token68, as the grammar says', () => {
    expect(parseWwwAuthenticate('Bearer error=')).toEqual([
      { scheme: 'Bearer', params: {}, token68: 'error=' },
    ]);
  });

  it('tolerates optional whitespace around "=" and empty list elements', () => {
    expect(parseWwwAuthenticate(' , Bearer realm = "x" ,, error = invalid_token ,  Basic')).toEqual([
      { scheme: 'Bearer', params: { realm: 'x', error: 'invalid_token' } },
      { scheme: 'Basic', params: {} },
    ]);
  });

  it('keeps the first of repeated parameters and treats __proto__ as a plain name', () => {
    const [challenge] = parseWwwAuthenticate('Bearer error=a, error=b, __proto__=x');
    expect(challenge?.params.error).toBe('a');
    expect(Object.getPrototypeOf(challenge?.params)).toBe(Object.prototype);
    expect(Object.keys(challenge?.params ?? {})).toEqual(['error', '__proto__']);
  });

  it.each([
    ['Bearer realm="unterminated', 'an unterminated quoted-string'],
    ['Bearer realm=x, error=', 'a missing value for the auth-param "error"'],
    ['Bearer error=a b', 'unexpected text after the auth-param "error"'],
    ['="x"', 'an unexpected "=" where an auth-scheme should start'],
  ])('refuses %s with a ConfigurationError saying where', (header, what) => {
    expect(() => parseWwwAuthenticate(header)).toThrow(ConfigurationError);
    expect(() => parseWwwAuthenticate(header)).toThrow(`WWW-Authenticate header is malformed: ${what}`);
  });
});

describe('findBearerChallenge', () => {
  it('finds the Bearer challenge whatever its case or position', () => {
    expect(findBearerChallenge('Basic realm="x", bearer error="invalid_token"')).toEqual({
      scheme: 'bearer',
      params: { error: 'invalid_token' },
    });
    expect(findBearerChallenge('Basic realm="x"')).toBeUndefined();
    expect(findBearerChallenge(null)).toBeUndefined();
  });

  it('treats a malformed header that starts with Bearer as a bare Bearer challenge', () => {
    expect(findBearerChallenge('Bearer error="broken')).toEqual({ scheme: 'Bearer', params: {} });
    expect(findBearerChallenge('Basic "broken')).toBeUndefined();
  });
});
