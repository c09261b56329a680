import type { Check } from '../check.js';
import audienceClaim from './audience/audience-claim.js';
import audienceForeign from './audience/audience-foreign.js';
import audienceForeignEndpoint from './audience/audience-foreign-endpoint.js';
import bearerBodyToken from './bearer-header/bearer-body-token.js';
import bearerInvalidTokenError from './bearer-header/bearer-invalid-token-error.js';
import bearerMalformedHeader from './bearer-header/bearer-malformed-header.js';
import bearerMissingHeader from './bearer-header/bearer-missing-header.js';
import bearerOtherScheme from './bearer-header/bearer-other-scheme.js';
import bearerQueryToken from './bearer-header/bearer-query-token.js';
import bearerSchemeCase from './bearer-header/bearer-scheme-case.js';
import bearerValidToken from './bearer-header/bearer-valid-token.js';
import partnerIsolation from './partner-isolation/partner-isolation.js';
import scopeEnforced from './scope-enforcement/scope-enforced.js';
import scopeGranted from './scope-enforcement/scope-granted.js';
import scopeInsufficient403 from './scope-enforcement/scope-insufficient-403.js';
import scopeAuthorisedSet from './scope-intersection/scope-authorised-set.js';
import scopeClaim from './scope-intersection/scope-claim.js';
import scopeIntersection from './scope-intersection/scope-intersection.js';
import scopeOrder from './scope-intersection/scope-order.js';
import specDocumentedResponses from './spec-conformance/spec-documented-responses.js';
import specNoServerErrors from './spec-conformance/spec-no-server-errors.js';
import tokenExpiresIn from './token-endpoint/token-expires-in.js';
import tokenIssuer from './token-endpoint/token-issuer.js';
import tokenJtiUnique from './token-endpoint/token-jti-unique.js';
import tokenMissingCredentials from './token-endpoint/token-missing-credentials.js';
import tokenNoStore from './token-endpoint/token-no-store.js';
import tokenPartnerId from './token-endpoint/token-partner-id.js';
import tokenSuccessResponse from './token-endpoint/token-success-response.js';
import tokenUnsupportedGrantType from './token-endpoint/token-unsupported-grant-type.js';
import tokenWrongSecret from './token-endpoint/token-wrong-secret.js';
import integrityAlgNone from './token-integrity/integrity-alg-none.js';
import integrityEmbeddedJwk from './token-integrity/integrity-embedded-jwk.js';
import integrityExpired from './token-integrity/integrity-expired.js';
import integrityForeignIssuer from './token-integrity/integrity-foreign-issuer.js';
import integrityHs256PublicKey from './token-integrity/integrity-hs256-public-key.js';
import integrityJku from './token-integrity/integrity-jku.js';
import integrityTamperedPayload from './token-integrity/integrity-tampered-payload.js';
import integrityUnknownKey from './token-integrity/integrity-unknown-key.js';

/** The catalogue, in report order (by category). Ids are stable: reports and --only/--skip use them. */
export const checks: readonly Check[] = [
  tokenSuccessResponse,
  tokenMissingCredentials,
  tokenWrongSecret,
  tokenUnsupportedGrantType,
  tokenNoStore,
  tokenExpiresIn,
  tokenJtiUnique,
  tokenPartnerId,
  tokenIssuer,
  scopeAuthorisedSet,
  scopeIntersection,
  scopeClaim,
  scopeOrder,
  audienceClaim,
  audienceForeign,
  audienceForeignEndpoint,
  bearerValidToken,
  bearerMissingHeader,
  bearerSchemeCase,
  bearerOtherScheme,
  bearerQueryToken,
  bearerBodyToken,
  bearerMalformedHeader,
  bearerInvalidTokenError,
  integrityAlgNone,
  integrityHs256PublicKey,
  integrityTamperedPayload,
  integrityUnknownKey,
  integrityEmbeddedJwk,
  integrityJku,
  integrityForeignIssuer,
  integrityExpired,
  scopeGranted,
  scopeEnforced,
  scopeInsufficient403,
  partnerIsolation,
  specDocumentedResponses,
  specNoServerErrors,
];

export const checkIds: readonly string[] = checks.map((check) => check.id);
