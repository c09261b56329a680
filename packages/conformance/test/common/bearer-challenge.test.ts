import { describe, expect, it } from 'vitest';
import { bearerChallengeOf, parseChallenges } from '../../src/common/bearer-challenge.js';

describe('parseChallenges (RFC 9110 §11.6.1)', () => {
  it('reads a Bearer challenge with quoted and token values', () => {
    expect(
      parseChallenges(
        'Bearer realm="partner-api", error=invalid_token, error_description="the token \\"expired\\""',
      ),
    ).toEqual({
      challenges: [
        {
          scheme: 'Bearer',
          params: { realm: 'partner-api', error: 'invalid_token', error_description: 'the token "expired"' },
        },
      ],
      problems: [],
    });
  });

  it('reads several challenges and a token68', () => {
    const parsed = parseChallenges('Basic realm="x", Bearer, Negotiate abc123==');
    expect(parsed.problems).toEqual([]);
    expect(parsed.challenges.map((c) => c.scheme)).toEqual(['Basic', 'Bearer', 'Negotiate']);
    expect(parsed.challenges[2]!.token68).toBe('abc123==');
  });

  it('reports syntax problems', () => {
    expect(parseChallenges('Bearer error="invalid_token').problems).toContain(
      'a quoted-string is not closed',
    );
    expect(parseChallenges('Bearer error="a", error="b"').problems).toContain(
      'the parameter error appears twice',
    );
    expect(parseChallenges('').problems).toEqual(['no challenge']);
    expect(parseChallenges('Bearer realm="x" junk').problems[0]).toMatch(/^expected ","/);
  });
});

describe('bearerChallengeOf (RFC 6750 §3)', () => {
  it('finds the Bearer challenge in any case and judges its error code', () => {
    expect(
      bearerChallengeOf(
        new Headers({ 'www-authenticate': 'bearer error="insufficient_scope", scope="read:loans"' }),
      ),
    ).toEqual({
      challenge: { scheme: 'bearer', params: { error: 'insufficient_scope', scope: 'read:loans' } },
      problems: [],
    });
    expect(
      bearerChallengeOf(new Headers({ 'www-authenticate': 'Bearer error="bad_thing"' })).problems,
    ).toEqual(['unknown error code "bad_thing"']);
    expect(bearerChallengeOf(new Headers()).problems).toEqual(['no WWW-Authenticate header']);
    expect(bearerChallengeOf(new Headers({ 'www-authenticate': 'Basic realm="x"' })).problems).toEqual([
      'no Bearer challenge in "Basic realm=\\"x\\""',
    ]);
  });
});
