import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { builtErrorProblems, type ErrorCase } from '../../../test-support/built-errors.js';

// The built package as a user loads it (import and require of dist/): every exported error class keeps its name and code in
// ESM and CJS (a bundler renaming a class, e.g. to `_Name`, shows here). Build first.
const packageDir = fileURLToPath(new URL('..', import.meta.url));

const cases: Record<string, ErrorCase> = {
  APIConnectionError: { args: ['message'], code: 'ERR_CONNECTION' },
  APITimeoutError: { args: ['message'], code: 'ERR_TIMEOUT' },
  APIUserAbortError: { args: ['message'], code: 'ERR_USER_ABORT' },
  AuthenticationError: { args: ['message'], code: 'ERR_AUTHENTICATION' },
  BadRequestError: { args: ['message'], code: 'ERR_BAD_REQUEST' },
  BearerInsufficientScopeError: { args: ['read:loans'], code: 'ERR_BEARER_INSUFFICIENT_SCOPE' },
  ConfigurationError: { args: ['message'], code: 'ERR_CONFIGURATION' },
  ConflictError: { args: ['message'], code: 'ERR_CONFLICT' },
  InsecureTokenUrlError: { args: ['message'], code: 'ERR_INSECURE_TOKEN_URL' },
  InsufficientScopeError: { args: ['message'], code: 'ERR_INSUFFICIENT_SCOPE' },
  InternalServerError: { args: ['message'], code: 'ERR_INTERNAL_SERVER' },
  NotApprovedForProductionError: {
    args: ['message', { status: 400, error: 'unauthorized_client' }],
    code: 'ERR_NOT_APPROVED_FOR_PRODUCTION',
  },
  NotFoundError: { args: ['message'], code: 'ERR_NOT_FOUND' },
  PartnerApiError: { args: ['message', 'ERR_CONFIGURATION'], code: 'ERR_CONFIGURATION' },
  PartnerAuthError: { args: ['ERR_TOKEN_NETWORK', 'message'], code: 'ERR_TOKEN_NETWORK' },
  PermissionDeniedError: { args: ['message'], code: 'ERR_PERMISSION_DENIED' },
  RateLimitError: { args: ['message'], code: 'ERR_RATE_LIMIT' },
  RedirectRefusedError: { args: ['message', 'https://elsewhere.example/'], code: 'ERR_REDIRECT' },
  ResponseShapeError: { args: ['message'], code: 'ERR_RESPONSE_SHAPE' },
  ScopeNotGrantedError: { args: [['create:repayment'], ['read:loans']], code: 'ERR_SCOPE_NOT_GRANTED' },
  TokenNetworkError: { args: ['message'], code: 'ERR_TOKEN_NETWORK' },
  TokenRequestError: {
    args: ['message', { status: 400, error: 'invalid_client' }],
    code: 'ERR_TOKEN_REQUEST',
  },
  TokenResponseError: { args: ['message'], code: 'ERR_TOKEN_RESPONSE' },
  TokenThrottledError: { args: ['message', 1000], code: 'ERR_TOKEN_THROTTLED' },
  UnprocessableEntityError: { args: ['message'], code: 'ERR_UNPROCESSABLE_ENTITY' },
};

it('every exported error class keeps its name and code in the built ESM and CJS', async () => {
  const { checked, problems } = await builtErrorProblems(packageDir, cases);
  expect(problems).toEqual([]);
  expect(checked).toHaveLength(2 * Object.keys(cases).length);
});
