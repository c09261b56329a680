import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import type { FaultSet } from './faults.js';
import type { KeySet } from './jwks.js';
import type { MockClient } from './mock-client.js';
import { approvedScopes } from './production-approval.js';
import type { PartnerRegisterReader, RegisterReader } from './production-register.js';
import { type Profile, profileRules } from './profile.js';
import { intersectScopes, knownScopes, parseScopeString } from './scope-set.js';
import type { TokenErrorAnswer, TokenRequest } from './token-request.js';

/** The token response of the API documentation §2.2. */
export interface TokenResponse {
  access_token: string;
  token_type: string;
  expires_in: number;
  scope: string;
  iss: string;
  partnerId: string;
  jti: string;
}

export interface IssuerContext {
  readonly profile: Profile;
  readonly issuer: string;
  readonly audience: string;
  /** Other APIs this auth server issues tokens for (their tokens are refused by this mock's API). */
  readonly otherAudiences: readonly string[];
  readonly tokenTtlSeconds: number;
  readonly clock: () => number;
  readonly keys: KeySet;
  readonly faults: FaultSet;
  readonly emptyIntersection: 'invalid_scope' | 'empty-token';
  /** The jti every token carries under the token-reuse-jti fault. */
  readonly fixedJti: string;
  /** The production profile's register: tokens only for active partners, with their approved scopes. */
  readonly register?: RegisterReader | PartnerRegisterReader | undefined;
}

/** The audience the token-wrong-audience-claim fault puts in tokens. */
export const wrongAudience = 'https://wrong-audience.invalid';

function grantScopes(
  request: TokenRequest,
  client: MockClient,
  faults: FaultSet,
): string[] | TokenErrorAnswer {
  const authorised = knownScopes(client.authorizedScopes);
  const requested = request.scope === undefined ? [] : parseScopeString(request.scope);
  if (requested === undefined)
    return {
      status: 400,
      error: 'invalid_scope',
      description: 'the scope parameter is malformed (RFC 6749 §3.3)',
    };
  // No scope requested: every authorised scope.
  if (requested.length === 0 || faults.has('token-ignore-requested-scope')) return authorised;
  if (faults.has('token-grant-unauthorized-scopes')) return knownScopes(requested);
  if (faults.has('token-scope-order-sensitive') && requested.join(' ') !== [...requested].sort().join(' '))
    return intersectScopes(requested.slice(0, 1), authorised);
  return intersectScopes(requested, authorised);
}

/**
 * Checks grant type, audience and scope of an authenticated request, then signs the access token.
 */
export async function issueToken(
  request: TokenRequest,
  client: MockClient,
  context: IssuerContext,
): Promise<TokenResponse | TokenErrorAnswer> {
  const { faults } = context;
  if (request.grantType === undefined || request.grantType === '')
    return { status: 400, error: 'invalid_request', description: 'grant_type is missing' };
  if (request.grantType !== 'client_credentials' && !faults.has('token-accept-any-grant-type'))
    return {
      status: 400,
      error: 'unsupported_grant_type',
      description: 'grant_type must be client_credentials',
    };
  // No audience: the partner API (the audience this server issues for unless asked for another it knows).
  let audience = request.audience ?? context.audience;
  if (audience !== context.audience && !context.otherAudiences.includes(audience)) {
    if (!faults.has('token-accept-foreign-audience'))
      return {
        status: 403,
        error: 'access_denied',
        description: `the audience is not the partner API; ask for audience=${context.audience}`,
      };
  }
  if (faults.has('token-wrong-audience-claim')) audience = wrongAudience;
  const approved = context.register
    ? await approvedScopes(context.register, client.partnerId, context.clock)
    : undefined;
  if (approved !== undefined && !Array.isArray(approved)) return approved as TokenErrorAnswer;
  const authorisedGrant = grantScopes(request, client, faults);
  if (!Array.isArray(authorisedGrant)) return authorisedGrant;
  // Production: requested ∩ authorised ∩ approved (the approval is a third set, §4.1 rule 1).
  const granted =
    approved === undefined ? authorisedGrant : intersectScopes(authorisedGrant, approved as string[]);
  if (granted.length === 0 && context.emptyIntersection === 'invalid_scope')
    return {
      status: 400,
      error: 'invalid_scope',
      description:
        approved === undefined
          ? 'none of the requested scopes is authorised for this client'
          : `none of the requested scopes is both authorised for this client and approved for production (approved: ${approved.join(' ') || 'none'})`,
    };
  const rules = profileRules[context.profile];
  const lifetime = context.tokenTtlSeconds;
  const iat = Math.floor(context.clock() / 1000);
  const jti = faults.has('token-reuse-jti') ? context.fixedJti : randomUUID();
  const claimScopes = faults.has('token-scope-claim-mismatch')
    ? knownScopes(client.authorizedScopes)
    : granted;
  const key = context.keys.signing;
  const accessToken = await new SignJWT({
    iss: context.issuer,
    sub: client.clientId,
    aud: rules.audClaim(audience),
    iat,
    // nbf = iat so that the API's nbf rule is exercised by genuine tokens (move the clock back).
    nbf: iat,
    exp: iat + lifetime,
    jti,
    client_id: client.clientId,
    scope: rules.scopeClaim(claimScopes),
    partnerId: client.partnerId,
  })
    .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: rules.typ })
    .sign(key.privateKey);
  return {
    access_token: accessToken,
    token_type: faults.has('token-type-not-bearer') ? 'mac' : rules.tokenType,
    expires_in: faults.has('token-expires-in-mismatch') ? lifetime * 2 : rules.expiresIn(lifetime),
    scope: granted.join(' '),
    iss: faults.has('token-iss-mismatch')
      ? `${context.issuer.replace(/\/$/, '')}/other-issuer/`
      : context.issuer,
    partnerId: faults.has('token-partner-id-mismatch') ? `${client.partnerId}-other` : client.partnerId,
    jti,
  };
}
