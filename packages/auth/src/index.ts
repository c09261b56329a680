export type { AccessToken } from './access-token.js';
export { type AuthFetch, type AuthFetchOptions, createAuthFetch } from './auth-fetch.js';
export { type Challenge, findBearerChallenge, parseWwwAuthenticate } from './bearer-challenge.js';
export type { Clock, Sleep } from './clock.js';
export { raceSignal, startDeadline } from './clock.js';
export {
  createStderrLogger,
  type LogLevel,
  logLevelFromEnv,
  logLevels,
  logTokenEvent,
  type StderrLogger,
} from './env-logger.js';
export {
  BearerInsufficientScopeError,
  ConfigurationError,
  InsecureTokenUrlError,
  NotApprovedForProductionError,
  PartnerApiError,
  type PartnerApiErrorCode,
  type PartnerApiErrorDetails,
  PartnerAuthError,
  type PartnerAuthErrorCode,
  ScopeNotGrantedError,
  TokenAbortedError,
  TokenNetworkError,
  TokenRequestError,
  TokenResponseError,
  TokenThrottledError,
  TokenTimeoutError,
} from './errors.js';
export {
  describeNetworkError,
  redactSecrets,
  redactTokens,
  redactTokensDeep,
  shortenToken,
} from './redact.js';
export {
  backoffDelay,
  defaultRetryPolicy,
  isRetryableStatus,
  parseRetryAfter,
  type RetryOptions,
  type RetryPolicy,
  resolveRetryPolicy,
  retryAfterFromHeaders,
} from './retry.js';
export { missingScopes, normalizeScopes, parseScopeString, type ScopeSet } from './scope-set.js';
export type { StoredEntryProblem } from './stored-entry.js';
export { isLoopbackHost } from './token-endpoint.js';
export type { TokenEvent, TokenEventListener } from './token-event.js';
export {
  ALLOWED_ALGORITHMS,
  createTokenProvider,
  type GetTokenOptions,
  type PartnerEnvironment,
  type RefreshOptions,
  type TokenProvider,
  type TokenProviderOptions,
  type VerifyOptions,
} from './token-provider.js';
export { MAX_THROTTLE_MS } from './token-request.js';
export {
  createMemoryTokenStore,
  type SingleFlightOptions,
  type StoredToken,
  type TokenStore,
} from './token-store.js';
