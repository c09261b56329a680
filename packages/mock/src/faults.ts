import { MockError } from './errors.js';

/**
 * The fault catalogue. Each fault breaks exactly one rule of the mock so that a conformance check can
 * prove that it fails when the rule is broken. The names are a contract with @partner-lending/conformance.
 */
export const faultCatalogue = {
  // Token endpoint
  'token-accept-wrong-secret': 'a known client_id with a wrong secret still gets a token',
  'token-accept-missing-credentials':
    'a request without client credentials gets a token for the first client',
  'token-accept-any-grant-type': 'any grant_type value is treated as client_credentials',
  'token-omit-no-store': 'token answers carry no Cache-Control: no-store (nor Pragma: no-cache)',
  'token-ignore-requested-scope': 'grants every authorised scope whatever was requested (over-grant)',
  'token-grant-unauthorized-scopes':
    'grants requested known scopes even when the client is not authorised for them',
  'token-scope-order-sensitive':
    'when the requested scopes are not in sorted order, only the first one is granted',
  'token-scope-claim-mismatch':
    'the JWT scope claim lists every authorised scope while the response scope is correct',
  'token-expires-in-mismatch': 'expires_in is twice the JWT lifetime',
  'token-reuse-jti': 'every token carries the same jti',
  'token-partner-id-mismatch': 'the response partnerId differs from the JWT partnerId claim',
  'token-iss-mismatch': 'the response iss differs from the JWT iss claim',
  'token-type-not-bearer': 'token_type is "mac"',
  'token-wrong-audience-claim':
    'the JWT aud names another audience (the API, with this fault, still accepts its own tokens)',
  'token-accept-foreign-audience':
    'the token endpoint issues tokens for any requested audience instead of 403 access_denied',
  // Resource server
  'api-skip-audience-check': 'aud is not checked',
  'api-accept-alg-none': 'unsigned alg "none" tokens (any case) are accepted',
  'api-accept-hs256-public-key':
    'HS256 tokens verify with the SPKI PEM text of a JWKS key as HMAC secret (key confusion)',
  'api-skip-signature-check': 'the signature is not verified (alg must still be RS256; unknown kid accepted)',
  'api-trust-embedded-jwk': 'a jwk in the JWS header is used to verify',
  'api-trust-jku': 'a token whose header has jku is accepted without verification',
  'api-ignore-expiry': 'exp is not checked',
  'api-ignore-nbf': 'nbf is not checked',
  'api-skip-issuer-check': 'iss is not checked',
  'api-ignore-scope': 'no scope check',
  'api-insufficient-scope-401': 'a missing scope is answered 401 instead of 403 (still refused)',
  'api-skip-partner-isolation': "a token may be used on another partner's path",
  'api-accept-query-token': 'an access_token query parameter is honoured when no header is sent',
  'api-accept-body-token': 'an access_token form/JSON body field is honoured when no header is sent',
  'api-bearer-case-sensitive': 'only the exact scheme "Bearer" is accepted ("bearer" gets 401)',
  'api-accept-any-scheme': 'any auth scheme name (e.g. "Token <jwt>", "Basic <jwt>") is accepted',
  'api-omit-challenge': '401 answers carry no WWW-Authenticate',
  'api-challenge-without-error': '401 for a bad token carries a challenge without error="invalid_token"',
  'api-crash-on-malformed-header':
    'a malformed Authorization header (Bearer without a b64token, or a token that is not a compact JWS) gets a 500',
  'api-reject-valid-tokens': 'every token is refused with 401 invalid_token (breaks the positive controls)',
  'api-undocumented-response': 'the loans 200 answer has Content-Type: text/plain',
  'api-no-body-limit': 'bodies over 1 MiB are accepted',
  // Added beyond the contract's list: the rfc9068 profile checks typ, and every rule has a fault.
  'api-skip-typ-check': 'rfc9068 profile: the typ header (at+jwt) is not checked',
} as const;

export type FaultName = keyof typeof faultCatalogue;

/** Every fault name, in catalogue order. */
export const faultNames = Object.keys(faultCatalogue) as FaultName[];

export function isFaultName(value: unknown): value is FaultName {
  return typeof value === 'string' && Object.hasOwn(faultCatalogue, value);
}

/** Validates a list of fault names; throws MockError ERR_MOCK_FAULT naming the valid ones. */
export function parseFaults(values: readonly unknown[]): FaultName[] {
  const out: FaultName[] = [];
  for (const value of values) {
    if (!isFaultName(value)) {
      throw new MockError(
        'ERR_MOCK_FAULT',
        `Unknown fault ${JSON.stringify(value)}. Expected one of: ${faultNames.join(', ')}.`,
      );
    }
    if (!out.includes(value)) out.push(value);
  }
  return out;
}

/** A fast membership test over the active faults. */
export type FaultSet = ReadonlySet<FaultName>;
