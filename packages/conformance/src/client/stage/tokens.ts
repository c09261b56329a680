import { decodeJwt, scopesOfClaim } from '../../common/jwt.js';
import type { IssuedToken } from '../session.js';

/** What the stage knows of its own clock and client when it reads an issued token. */
export interface TokenContext {
  startedAtEpoch: number;
  since: () => number;
  ttlSeconds: number;
  partnerId: string;
}

/** An issued token before it has a reference: its value (never recorded) and its record. */
export interface TokenDraft {
  value: string;
  token: Omit<IssuedToken, 'ref'>;
}

/**
 * Reads the token of a 200 answer of the token endpoint for the record; undefined when the body holds
 * none. The token itself is never recorded: a stage keeps it only to recognise it when it comes back,
 * and every record names it by reference (`T1`, `T2`, …) and its last 6 characters.
 */
export function tokenDraftOf(body: string, issuedBy: number, context: TokenContext): TokenDraft | undefined {
  const { startedAtEpoch, since, ttlSeconds } = context;
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(body) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const token = value.access_token;
  if (typeof token !== 'string') return undefined;
  const claims = decodeJwt(token)?.payload ?? {};
  const issuedAt = since();
  const expAt =
    typeof claims.exp === 'number' ? claims.exp * 1000 - startedAtEpoch : issuedAt + ttlSeconds * 1000;
  return {
    value: token,
    token: {
      seq: issuedBy,
      issuedAt,
      expAt,
      expiresIn: typeof value.expires_in === 'number' ? value.expires_in : ttlSeconds,
      scope:
        scopesOfClaim(claims.scope) ??
        String(value.scope ?? '')
          .split(' ')
          .filter(Boolean),
      partnerId: typeof claims.partnerId === 'string' ? claims.partnerId : context.partnerId,
      last6: token.slice(-6),
      // The phase is the token's own: a lifetime longer than the short one's (and its second of rounding).
      phase: expAt - issuedAt > (ttlSeconds + 1) * 1000 ? 'long' : 'short',
    },
  };
}
