import type { JWTPayload } from 'jose';
import { TokenResponseError } from './errors.js';
import { normalizeScopes, parseScopeString, type ScopeSet } from './scope-set.js';
import type { StoredToken } from './token-store.js';

/** A token response is a small JSON object; anything larger is not one (and must not fill memory). */
export const MAX_TOKEN_RESPONSE_BYTES = 1024 * 1024;

/** Reads a body, refusing (and cancelling) it once it exceeds `limit` bytes. */
export async function readBodyLimited(response: Response, limit: number): Promise<Uint8Array> {
  const declared = Number(response.headers.get('content-length'));
  const tooLarge = () =>
    new TokenResponseError(
      `the token response is larger than ${limit === MAX_TOKEN_RESPONSE_BYTES ? '1 MiB' : `${limit} bytes`}; a token response is a small JSON object: check that authUrl/tokenUrl points at the token endpoint.`,
    );
  if (Number.isFinite(declared) && declared > limit) {
    await response.body?.cancel().catch(() => {});
    throw tooLarge();
  }
  if (!response.body) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

export interface TokenResponseContext {
  /** Epoch ms when the request started: expires_in counts from here. */
  requestedAt: number;
  now: number;
  audience: string;
  requestedScopes: ScopeSet;
  clockSkewMs: number;
  /** Verifies the signature and returns the payload; absent = decode only. */
  verifyJwt?: ((jwt: string) => Promise<JWTPayload>) | undefined;
}

const CHECK = 'check that authUrl/tokenUrl points at the partner auth service';

function fail(what: string, cause?: unknown): never {
  throw new TokenResponseError(`${what}; ${CHECK}.`, cause === undefined ? undefined : { cause });
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.slice(0, 40))}`;
  if (typeof value === 'number' || typeof value === 'boolean') return `${typeof value} ${String(value)}`;
  return typeof value;
}

function optionalString(body: Record<string, unknown>, field: string): string | undefined {
  const value = body[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') {
    fail(`the token response field "${field}" is ${describe(value)}; expected a non-empty string`);
  }
  return value;
}

function claimScopes(value: unknown): ScopeSet | undefined {
  if (value === undefined) return undefined;
  try {
    if (typeof value === 'string') return parseScopeString(value);
    if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return normalizeScopes(value);
  } catch (cause) {
    fail('the JWT "scope" claim holds an invalid scope value', cause);
  }
  fail(
    `the JWT "scope" claim is ${describe(value)}; expected a space-separated string (RFC 9068) or an array of strings`,
  );
}

function sameSet(a: ScopeSet, b: ScopeSet): boolean {
  return a.length === b.length && a.every((scope, i) => scope === b[i]);
}

function stripSlash(value: string): string {
  return value.endsWith('/') ? value.slice(0, -1) : value;
}

/** A JWT `aud` (a string or an array) contains `audience`, a trailing slash ignored on both sides. */
export function containsAudience(aud: unknown, audience: string): boolean {
  const audiences = typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud : [];
  const wanted = stripSlash(audience);
  return audiences.some((a) => typeof a === 'string' && stripSlash(a) === wanted);
}

function isJsonType(contentType: string): boolean {
  const type = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  return type === 'application/json' || type.endsWith('+json');
}

/**
 * Validates a 2xx token response (RFC 6749 §5.1; API documentation §2.2) and the JWT inside it, and returns the
 * token data to cache. Every failure is a TokenResponseError saying what was wrong.
 */
export async function processTokenResponse(
  response: Response,
  ctx: TokenResponseContext,
): Promise<StoredToken> {
  const contentType = response.headers.get('content-type');
  if (contentType !== null && !isJsonType(contentType)) {
    await response.body?.cancel().catch(() => {});
    const html = /html/i.test(contentType);
    fail(
      `the token endpoint answered ${response.status} with Content-Type ${JSON.stringify(contentType.slice(0, 80))}${
        html ? ' (an HTML page, e.g. a proxy or login page)' : ''
      } instead of a JSON token response (RFC 6749 §5.1)`,
    );
  }
  const bytes = await readBodyLimited(response, MAX_TOKEN_RESPONSE_BYTES);
  const text = new TextDecoder().decode(bytes);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    fail(
      `the token response is not JSON${text.trimStart().startsWith('<') ? ' (it looks like HTML)' : ''} (${bytes.byteLength} bytes)`,
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    fail(`the token response is ${describe(parsed)}; expected a JSON object`);
  }
  const body = parsed as Record<string, unknown>;

  const accessToken = body.access_token;
  if (typeof accessToken !== 'string' || accessToken === '') {
    fail(
      `the token response has no usable "access_token" (${
        accessToken === undefined ? 'missing' : typeof accessToken === 'string' ? 'empty' : typeof accessToken
      }); expected the JWT as a non-empty string`,
    );
  }
  const tokenType = body.token_type;
  if (typeof tokenType !== 'string') {
    fail(`the token response field "token_type" is ${describe(tokenType)}; expected "Bearer"`);
  }
  if (tokenType.toLowerCase() !== 'bearer') {
    fail(
      `the token response has token_type ${JSON.stringify(tokenType.slice(0, 40))}; only Bearer tokens (RFC 6750) are supported`,
    );
  }
  const rawExpiresIn = body.expires_in;
  const expiresIn =
    typeof rawExpiresIn === 'number'
      ? rawExpiresIn
      : typeof rawExpiresIn === 'string' && /^\d+$/.test(rawExpiresIn)
        ? Number(rawExpiresIn)
        : Number.NaN;
  if (!Number.isSafeInteger(expiresIn) || expiresIn <= 0) {
    fail(
      `the token response field "expires_in" is ${describe(rawExpiresIn)}; expected a positive integer of seconds`,
    );
  }
  const scopeField = body.scope;
  let responseScopes: ScopeSet | undefined;
  if (scopeField !== undefined) {
    if (typeof scopeField !== 'string') {
      fail(`the token response field "scope" is ${describe(scopeField)}; expected a space-separated string`);
    }
    try {
      responseScopes = parseScopeString(scopeField);
    } catch (cause) {
      fail('the token response field "scope" holds an invalid scope value', cause);
    }
  }
  const responsePartnerId = optionalString(body, 'partnerId');
  const responseIssuer = optionalString(body, 'iss');
  const responseJti = optionalString(body, 'jti');

  let claims: JWTPayload;
  // Loaded on the first token, not at import (see token-provider.ts).
  const { decodeJwt } = await import('jose');
  try {
    claims = decodeJwt(accessToken);
  } catch (cause) {
    fail(
      `the access_token is not a decodable JWT (${cause instanceof Error ? cause.message : 'decode failed'})`,
      cause,
    );
  }
  if (ctx.verifyJwt) {
    try {
      claims = await ctx.verifyJwt(accessToken);
    } catch (cause) {
      const code = (cause as { code?: unknown }).code;
      throw new TokenResponseError(
        `the access_token signature or claims did not verify (${typeof code === 'string' ? `${code}: ` : ''}${
          cause instanceof Error ? cause.message : 'verification failed'
        }); check verify.jwksUrl/verify.jwks and verify.issuer against the auth service.`,
        { cause },
      );
    }
  }

  const { exp } = claims;
  if (typeof exp !== 'number' || !Number.isFinite(exp)) {
    fail(`the JWT has no numeric "exp" claim (${describe(exp)}); the token's expiry cannot be checked`);
  }
  if (exp * 1000 + ctx.clockSkewMs <= ctx.now) {
    fail(
      `the JWT "exp" claim (${new Date(exp * 1000).toISOString()}) has already passed (now ${new Date(ctx.now).toISOString()}, clock skew allowance ${ctx.clockSkewMs} ms); check this machine's clock`,
    );
  }

  const aud = claims.aud;
  const audiences = typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud : undefined;
  if (audiences === undefined || !audiences.every((a) => typeof a === 'string')) {
    fail(`the JWT "aud" claim is ${describe(aud)}; expected a string or an array of strings`);
  }
  if (!containsAudience(audiences, ctx.audience)) {
    throw new TokenResponseError(
      `the JWT "aud" claim (${audiences.map((a) => JSON.stringify(a.slice(0, 200))).join(', ')}) does not contain the requested audience ${JSON.stringify(ctx.audience)}; the API would refuse this token: check the audience option (the partner API base URL).`,
    );
  }

  const claimedScopes = claimScopes(claims.scope);
  if (responseScopes && claimedScopes && !sameSet(responseScopes, claimedScopes)) {
    fail(
      `the response grants "${responseScopes.join(' ')}" but the JWT "scope" claim says "${claimedScopes.join(' ')}"; the token server contradicts itself`,
    );
  }
  const grantedScopes = responseScopes ?? claimedScopes ?? ctx.requestedScopes;

  const claimPartnerId = claims.partnerId;
  if (claimPartnerId !== undefined && typeof claimPartnerId !== 'string') {
    fail(`the JWT "partnerId" claim is ${describe(claimPartnerId)}; expected a string`);
  }
  if (
    responsePartnerId !== undefined &&
    claimPartnerId !== undefined &&
    responsePartnerId !== claimPartnerId
  ) {
    throw new TokenResponseError(
      `the response partnerId ${JSON.stringify(responsePartnerId)} differs from the JWT "partnerId" claim ${JSON.stringify(claimPartnerId)}; the API paths would name the wrong partner: report this to the auth service operator.`,
    );
  }
  const partnerId = responsePartnerId ?? claimPartnerId;
  if (partnerId === undefined) {
    fail('neither the token response nor the JWT carries a "partnerId"; it is needed to build the API paths');
  }

  const claimIssuer = claims.iss;
  if (responseIssuer !== undefined && claimIssuer !== undefined && responseIssuer !== claimIssuer) {
    fail(
      `the response iss ${JSON.stringify(responseIssuer)} differs from the JWT "iss" claim ${JSON.stringify(claimIssuer)}`,
    );
  }
  const issuer = responseIssuer ?? claimIssuer;
  if (issuer === undefined) fail('neither the token response nor the JWT carries an issuer ("iss")');
  const jti = responseJti ?? (typeof claims.jti === 'string' ? claims.jti : undefined);
  if (jti === undefined || jti === '')
    fail('neither the token response nor the JWT carries a token id ("jti")');

  return {
    accessToken,
    tokenType: 'Bearer',
    // exp bounds the life, unless this machine's clock already puts it in the past (within the skew
    // allowance, else the token was refused above): then the clocks differ and only the relative
    // expires_in says how long the token lives.
    expiresAt:
      exp * 1000 > ctx.now
        ? Math.min(ctx.requestedAt + expiresIn * 1000, exp * 1000)
        : ctx.requestedAt + expiresIn * 1000,
    obtainedAt: ctx.requestedAt,
    grantedScopes,
    partnerId,
    issuer,
    jti,
  };
}
