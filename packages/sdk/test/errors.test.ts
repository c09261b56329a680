import { describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  BadRequestError,
  ConflictError,
  errorFromResponse,
  InsufficientScopeError,
  InternalServerError,
  NotFoundError,
  PartnerApiError,
  PermissionDeniedError,
  RateLimitError,
  UnprocessableEntityError,
} from '../src/errors.js';

const context = { method: 'POST', path: '/v3/partner/p-1/repayments', scope: 'create:repayment' };
const answer = (status: number, headers: Record<string, string> = {}) =>
  new Response(null, { status, headers });

describe('errorFromResponse', () => {
  it('maps 403 insufficient_scope to InsufficientScopeError naming the scope and what to do', () => {
    const error = errorFromResponse(
      answer(403, {
        'www-authenticate': 'Bearer error="insufficient_scope", scope="create:repayment"',
        'x-request-id': 'req-42',
      }),
      { error: 'insufficient_scope' },
      context,
    );
    expect(error).toBeInstanceOf(InsufficientScopeError);
    expect(error).toBeInstanceOf(PermissionDeniedError);
    expect(error).toBeInstanceOf(PartnerApiError);
    expect(error.message).toBe(
      'The access token lacks create:repayment for POST /v3/partner/p-1/repayments (403 insufficient_scope, request id req-42); ask for it in the partner console.',
    );
    expect(error).toMatchObject({
      name: 'InsufficientScopeError',
      code: 'ERR_INSUFFICIENT_SCOPE',
      status: 403,
      errorCode: 'insufficient_scope',
      requestId: 'req-42',
      scope: 'create:repayment',
      challenge: { scheme: 'Bearer', params: { error: 'insufficient_scope', scope: 'create:repayment' } },
    });
  });

  it('falls back to the operation scope when the challenge names none', () => {
    const error = errorFromResponse(
      answer(403, { 'www-authenticate': 'Bearer error="insufficient_scope"' }),
      '',
      context,
    );
    expect(error).toMatchObject({ code: 'ERR_INSUFFICIENT_SCOPE', scope: 'create:repayment' });
  });

  it('maps a plain 403 to PermissionDeniedError about partner isolation', () => {
    const error = errorFromResponse(
      answer(403, { 'request-id': 'r-7' }),
      { error: 'access_denied' },
      context,
    );
    expect(error).toBeInstanceOf(PermissionDeniedError);
    expect(error).not.toBeInstanceOf(InsufficientScopeError);
    expect(error.message).toBe(
      "The partner API denied POST /v3/partner/p-1/repayments (403 access_denied, request id r-7). A token may only be used on its own partner's paths: leave partnerId out to use the token's own, or check the partner's access in the partner console.",
    );
  });

  it('maps 401 to AuthenticationError with the challenge parsed', () => {
    const error = errorFromResponse(
      answer(401, { 'www-authenticate': 'Bearer error="invalid_token", error_description="token expired"' }),
      undefined,
      { method: 'GET', path: '/v3/partner/p-1/loans' },
    );
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error.message).toBe(
      "The partner API refused the access token for GET /v3/partner/p-1/loans (401 invalid_token: token expired), also after fetching a fresh token. Check that the audience (PARTNER_AUDIENCE, default PARTNER_BASE_URL) is this API's base URL and that the client credentials belong to this environment.",
    );
    expect(error).toMatchObject({
      errorCode: 'invalid_token',
      errorDescription: 'token expired',
      status: 401,
    });
  });

  it('does not claim a fresh token was tried when the 401 carried no Bearer challenge', () => {
    const error = errorFromResponse(answer(401), { error: 'unauthorized' }, context);
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error.message).toBe(
      "The partner API refused the access token for POST /v3/partner/p-1/repayments (401 unauthorized); the answer had no WWW-Authenticate: Bearer challenge, so no fresh token was tried. Check that the audience (PARTNER_AUDIENCE, default PARTNER_BASE_URL) is this API's base URL and that the client credentials belong to this environment.",
    );
  });

  it('maps every documented status to its class and code', () => {
    const cases: [number, new (...args: never[]) => PartnerApiError, string][] = [
      [400, BadRequestError, 'ERR_BAD_REQUEST'],
      [404, NotFoundError, 'ERR_NOT_FOUND'],
      [409, ConflictError, 'ERR_CONFLICT'],
      [422, UnprocessableEntityError, 'ERR_UNPROCESSABLE_ENTITY'],
      [429, RateLimitError, 'ERR_RATE_LIMIT'],
      [500, InternalServerError, 'ERR_INTERNAL_SERVER'],
      [503, InternalServerError, 'ERR_INTERNAL_SERVER'],
    ];
    for (const [status, type, code] of cases) {
      const error = errorFromResponse(answer(status), undefined, context);
      expect(error, String(status)).toBeInstanceOf(type);
      expect(error.code).toBe(code);
      expect(error.status).toBe(status);
    }
    const other = errorFromResponse(answer(413), { error: 'too_large' }, context);
    expect(other.constructor).toBe(PartnerApiError);
    expect(other.code).toBe('ERR_API_STATUS');
  });

  it('says how long to wait on 429 and how many attempts were made', () => {
    const error = errorFromResponse(answer(429), undefined, { ...context, attempts: 3, retryAfterMs: 1500 });
    expect(error.message).toBe(
      'The partner API is rate limiting POST /v3/partner/p-1/repayments (429, 3 attempts). Slow down and retry in 2 s.',
    );
    expect(error).toMatchObject({ retryAfterMs: 1500, attempts: 3 });
  });

  it('reads the error code from the JSON body when there is no challenge', () => {
    const error = errorFromResponse(
      answer(400),
      { error: 'invalid_request', error_description: 'limit must be ≥ 1' },
      {
        method: 'GET',
        path: '/v3/partner/p-1/loans',
      },
    );
    expect(error.message).toBe(
      'The partner API refused GET /v3/partner/p-1/loans as malformed (400 invalid_request: limit must be ≥ 1). Check the parameters and body against the API reference.',
    );
  });
});
