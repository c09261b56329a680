export type { AccessToken } from './access-token.js';
export { type AuthFetch, type AuthFetchOptions, createAuthFetch } from './auth-fetch.js';
export { type Challenge, findBearerChallenge, parseWwwAuthenticate } from './bearer-challenge.js';
export type { Clock, Sleep } from './clock.js';
export {
  BearerInsufficientScopeError,
  InsecureTokenUrlError,
  PartnerAuthError,
  ScopeNotGrantedError,
  TokenNetworkError,
  TokenRequestError,
  TokenResponseError,
  TokenThrottledError,
} from './errors.js';
export { shortenToken } from './redact.js';
export { missingScopes, normalizeScopes, parseScopeString, type ScopeSet } from './scope-set.js';
export type { TokenEvent, TokenEventListener } from './token-event.js';
export {
  ALLOWED_ALGORITHMS,
  createTokenProvider,
  type GetTokenOptions,
  type RefreshOptions,
  type RetryOptions,
  type TokenProvider,
  type TokenProviderOptions,
  type VerifyOptions,
} from './token-provider.js';
export {
  createMemoryTokenStore,
  type SingleFlightOptions,
  type StoredToken,
  type TokenStore,
} from './token-store.js';
