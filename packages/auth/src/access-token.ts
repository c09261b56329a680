import { shortenToken } from './redact.js';

/** A bearer token ready to send, with what the server said about it. */
export interface AccessToken {
  /** The JWT to send as `Authorization: Bearer …`. Hidden from util.inspect and JSON.stringify. */
  accessToken: string;
  /** Always `Bearer` (the server's `token_type` is compared case-insensitively). */
  tokenType: 'Bearer';
  /** Epoch ms: min(request start + expires_in, JWT exp). */
  expiresAt: number;
  /** Scopes the server granted, sorted. */
  grantedScopes: readonly string[];
  partnerId: string;
  issuer: string;
  jti: string;
}

const inspectCustom = Symbol.for('nodejs.util.inspect.custom');

/** The same fields with the token shortened: what logs, inspection and serialisation get to see. */
export function redactedView(token: AccessToken): Record<string, unknown> {
  return {
    accessToken: shortenToken(token.accessToken),
    tokenType: token.tokenType,
    expiresAt: token.expiresAt,
    grantedScopes: token.grantedScopes,
    partnerId: token.partnerId,
    issuer: token.issuer,
    jti: token.jti,
  };
}

/**
 * A frozen AccessToken whose `util.inspect` and `JSON.stringify` forms show the token shortened, so
 * that logging the object does not leak the credential.
 */
export function toAccessToken(data: AccessToken): AccessToken {
  const token: AccessToken = {
    accessToken: data.accessToken,
    tokenType: 'Bearer',
    expiresAt: data.expiresAt,
    grantedScopes: Object.freeze([...data.grantedScopes]),
    partnerId: data.partnerId,
    issuer: data.issuer,
    jti: data.jti,
  };
  Object.defineProperty(token, 'toJSON', { value: () => redactedView(token), enumerable: false });
  Object.defineProperty(token, inspectCustom, {
    value: () => ({ ...redactedView(token), [Symbol.toStringTag]: 'AccessToken' }),
    enumerable: false,
  });
  return Object.freeze(token);
}
