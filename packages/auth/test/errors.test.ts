import { describe, expect, it } from 'vitest';
import {
  BearerInsufficientScopeError,
  InsecureTokenUrlError,
  PartnerApiError,
  PartnerAuthError,
  ScopeNotGrantedError,
  TokenNetworkError,
  TokenRequestError,
  TokenResponseError,
  TokenThrottledError,
} from '../src/errors.js';

describe('errors', () => {
  it('share one base class with stable codes and their own names', () => {
    const cause = new Error('root');
    const errors = [
      [new TokenRequestError('m', { status: 400 }, { cause }), 'ERR_TOKEN_REQUEST'],
      [new TokenResponseError('m', { cause }), 'ERR_TOKEN_RESPONSE'],
      [new TokenNetworkError('m', { cause }), 'ERR_TOKEN_NETWORK'],
      [new TokenThrottledError('m', 5, { cause }), 'ERR_TOKEN_THROTTLED'],
      [new ScopeNotGrantedError(['a'], []), 'ERR_SCOPE_NOT_GRANTED'],
      [new BearerInsufficientScopeError('a'), 'ERR_BEARER_INSUFFICIENT_SCOPE'],
      [new InsecureTokenUrlError('m'), 'ERR_INSECURE_TOKEN_URL'],
    ] as const;
    for (const [error, code] of errors) {
      expect(error).toBeInstanceOf(PartnerAuthError);
      // The family root the SDK's errors share: one instanceof catches auth errors too.
      expect(error).toBeInstanceOf(PartnerApiError);
      expect(error).toBeInstanceOf(Error);
      expect(error.code).toBe(code);
      expect(error.name).toBe(error.constructor.name);
    }
    // One code per class.
    expect(new Set(errors.map(([, code]) => code)).size).toBe(errors.length);
    expect(errors[0][0].cause).toBe(cause);
    expect(errors[0][0]).toMatchObject({ status: 400, errorCode: undefined });
    expect(new TokenResponseError('m').cause).toBeUndefined();
  });

  it('word ScopeNotGrantedError for one and for several scopes', () => {
    expect(new ScopeNotGrantedError(['a', 'b'], []).message).toBe(
      'the token server did not grant "a", "b" (granted: none); ask the partner administration console to authorise these scopes for the client, or do not call operations that need them.',
    );
  });

  it('does not claim "granted: none" when the token endpoint refused the scope outright', () => {
    expect(new ScopeNotGrantedError(['create:repayment'], undefined).message).toBe(
      'the token server did not grant "create:repayment" (it refused the request with invalid_scope); ask the partner administration console to authorise this scope for the client, or do not call operations that need it.',
    );
  });

  it('word BearerInsufficientScopeError without a scope', () => {
    expect(new BearerInsufficientScopeError(undefined, 'needs more').message).toBe(
      'the API refused the request with 403 insufficient_scope: needs more; the access token lacks a scope this operation requires: ask for it in getToken({ scopes }) and make sure the client is authorised for it.',
    );
  });
});
