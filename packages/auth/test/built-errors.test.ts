import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { builtErrorProblems, type ErrorCase } from '../../../test-support/built-errors.js';

// The built package as a user loads it (import and require of dist/): every exported error class keeps its name and code in
// ESM and CJS (a bundler renaming a class, e.g. to `_Name`, shows here). Build first.
const packageDir = fileURLToPath(new URL('..', import.meta.url));

const cases: Record<string, ErrorCase> = {
  PartnerApiError: { args: ['message', 'ERR_CONFIGURATION'], code: 'ERR_CONFIGURATION' },
  PartnerAuthError: { args: ['ERR_TOKEN_NETWORK', 'message'], code: 'ERR_TOKEN_NETWORK' },
  TokenRequestError: {
    args: ['message', { status: 400, error: 'invalid_client' }],
    code: 'ERR_TOKEN_REQUEST',
  },
  NotApprovedForProductionError: {
    args: ['message', { status: 400, error: 'unauthorized_client' }],
    code: 'ERR_NOT_APPROVED_FOR_PRODUCTION',
  },
  TokenResponseError: { args: ['message'], code: 'ERR_TOKEN_RESPONSE' },
  TokenNetworkError: { args: ['message'], code: 'ERR_TOKEN_NETWORK' },
  TokenThrottledError: { args: ['message', 1000], code: 'ERR_TOKEN_THROTTLED' },
  TokenAbortedError: { args: [new Error('aborted')], code: 'ERR_TOKEN_ABORTED' },
  TokenTimeoutError: { args: [1000], code: 'ERR_TOKEN_TIMEOUT' },
  ScopeNotGrantedError: { args: [['create:repayment'], ['read:loans']], code: 'ERR_SCOPE_NOT_GRANTED' },
  BearerInsufficientScopeError: { args: ['read:loans'], code: 'ERR_BEARER_INSUFFICIENT_SCOPE' },
  InsecureTokenUrlError: { args: ['message'], code: 'ERR_INSECURE_TOKEN_URL' },
};

it('every exported error class keeps its name and code in the built ESM and CJS', async () => {
  const { checked, problems } = await builtErrorProblems(packageDir, cases);
  expect(problems).toEqual([]);
  expect(checked).toHaveLength(2 * Object.keys(cases).length);
});
