export {
  type AccessToken,
  type Challenge,
  PartnerAuthError,
  ScopeNotGrantedError,
  TokenNetworkError,
  type TokenProvider,
  TokenRequestError,
  TokenResponseError,
  TokenThrottledError,
} from '@partner-lending/auth';
export {
  type CreateResource,
  createPartnerClient,
  type IterateLoansOptions,
  type ListLoansOptions,
  type Loan,
  type LoansPage,
  type LoansResource,
  type OpenObject,
  type PartnerClient,
  type PartnerClientOptions,
  type PartnerPaths,
  type PartnerPathsClient,
  type RequestOptions,
} from './client.js';
export {
  APIConnectionError,
  APITimeoutError,
  APIUserAbortError,
  AuthenticationError,
  BadRequestError,
  ConfigurationError,
  ConflictError,
  InsufficientScopeError,
  InternalServerError,
  NotFoundError,
  PartnerApiError,
  type PartnerApiErrorCode,
  type PartnerApiErrorDetails,
  PermissionDeniedError,
  RateLimitError,
  ResponseShapeError,
  UnprocessableEntityError,
} from './errors.js';
export type { components, operations, paths } from './generated/openapi.js';
export { environmentVariables } from './options.js';
export type { ItemsSelector, Page } from './pagination.js';
export { retryPolicy } from './retry.js';
export type { CallOptions, PartnerLogger } from './transport.js';
