import type { ClientCheck } from '../check.js';
import clientBearerHeader from './client-credentials/client-bearer-header.js';
import clientSecretConfined from './client-credentials/client-secret-confined.js';
import clientTokenNotInUrl from './client-credentials/client-token-not-in-url.js';
import clientOwnPartner from './client-requests/client-own-partner.js';
import clientRequestShape from './client-requests/client-request-shape.js';
import clientCreateNotReplayed from './client-resilience/client-create-not-replayed.js';
import clientRetryAfter from './client-resilience/client-retry-after.js';
import clientAudience from './client-scope/client-audience.js';
import clientGrantedScopeRespected from './client-scope/client-granted-scope-respected.js';
import clientLeastScope from './client-scope/client-least-scope.js';
import clientNoExpiredToken from './client-token-lifecycle/client-no-expired-token.js';
import clientRevocationRecovery from './client-token-lifecycle/client-revocation-recovery.js';
import clientSingleFlight from './client-token-lifecycle/client-single-flight.js';
import clientTokenReuse from './client-token-lifecycle/client-token-reuse.js';

/** The client catalogue, in report order. Ids are stable. */
export const clientChecks: readonly ClientCheck[] = [
  clientBearerHeader,
  clientTokenNotInUrl,
  clientSecretConfined,
  clientNoExpiredToken,
  clientTokenReuse,
  clientSingleFlight,
  clientRevocationRecovery,
  clientRetryAfter,
  clientCreateNotReplayed,
  clientAudience,
  clientLeastScope,
  clientGrantedScopeRespected,
  clientOwnPartner,
  clientRequestShape,
];

export const clientCheckIds = clientChecks.map((check) => check.id);
