/**
 * How tokens look. `deployed` mirrors what the deployed service is documented to do (Partner Lending
 * API — Authentication and Access §2.2); `rfc9068` follows the JWT access-token profile of RFC 9068.
 */
export type Profile = 'deployed' | 'rfc9068';

export const profiles: readonly Profile[] = ['deployed', 'rfc9068'];

export interface ProfileRules {
  /** The `token_type` of the token response. */
  readonly tokenType: 'bearer' | 'Bearer';
  /** The JOSE `typ` header of access tokens. */
  readonly typ: 'JWT' | 'at+jwt';
  /** `aud` as an array or a single string. */
  readonly audClaim: (audience: string) => string | string[];
  /** `scope` as an array of strings or a space-separated string. */
  readonly scopeClaim: (granted: readonly string[]) => string | string[];
  /** The issuer for an auth server at `authUrl` (no trailing slash). */
  readonly issuer: (authUrl: string) => string;
  /** `expires_in` for a JWT lifetime in seconds. */
  readonly expiresIn: (lifetimeSeconds: number) => number;
}

export const profileRules: Readonly<Record<Profile, ProfileRules>> = {
  deployed: {
    tokenType: 'bearer',
    typ: 'JWT',
    audClaim: (audience) => [audience],
    scopeClaim: (granted) => [...granted],
    issuer: (authUrl) => `${authUrl}/`,
    // One second short of the lifetime (43199 for 12 h), never below 1 (the spec's minimum).
    expiresIn: (lifetime) => Math.max(1, lifetime - 1),
  },
  rfc9068: {
    tokenType: 'Bearer',
    typ: 'at+jwt',
    audClaim: (audience) => audience,
    scopeClaim: (granted) => granted.join(' '),
    issuer: (authUrl) => authUrl,
    expiresIn: (lifetime) => lifetime,
  },
};

/**
 * A profile of the mock: a token shape, or `production` — a stand-in for the production token
 * endpoint, with the deployed service's token shape, that issues tokens only to partners the
 * certification service's register lists as active.
 */
export type MockProfile = Profile | 'production';

export const mockProfiles: readonly MockProfile[] = [...profiles, 'production'];

/** The token shape of a profile (`production` issues the deployed service's tokens). */
export const tokenShapeOf = (profile: MockProfile): Profile =>
  profile === 'production' ? 'deployed' : profile;
