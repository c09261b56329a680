import { decodeJwt, scopesOfClaim } from '../../common/jwt.js';
import type { IssuedToken } from '../session.js';

/**
 * The tokens a stage issued, known by reference (`T1`, `T2`, …) in every record: the token itself is
 * kept only in memory, to recognise it when the journey sends it back.
 */
export interface TokenBook {
  readonly issued: IssuedToken[];
  /** The issued token a bearer value is, if any. */
  byValue(token: string): IssuedToken | undefined;
  byRef(ref: string): IssuedToken | undefined;
  /** Registers the token of a 200 answer of the token endpoint; undefined when the body holds none. */
  register(body: string, issuedBy: number, listed?: boolean): IssuedToken | undefined;
}

export function createTokenBook(options: {
  startedAtEpoch: number;
  since: () => number;
  ttlSeconds: number;
  partnerId: string;
}): TokenBook {
  const { startedAtEpoch, since, ttlSeconds } = options;
  const tokens: IssuedToken[] = [];
  const tokenRefs = new Map<string, IssuedToken>();
  const tokensByRef = new Map<string, IssuedToken>();
  let count = 0;
  return {
    issued: tokens,
    byValue: (token) => tokenRefs.get(token),
    byRef: (ref) => tokensByRef.get(ref),
    register(body, issuedBy, listed = true) {
      let value: Record<string, unknown>;
      try {
        value = JSON.parse(body) as Record<string, unknown>;
      } catch {
        return undefined;
      }
      const token = value.access_token;
      if (typeof token !== 'string') return undefined;
      const claims = decodeJwt(token)?.payload ?? {};
      // Not registered with the redactor: issued tokens are JWTs, which it shortens by their shape, and a
      // list of every token ever issued would make each redaction slower as the session grows.
      const issued: IssuedToken = {
        ref: `T${++count}`,
        seq: issuedBy,
        issuedAt: since(),
        expAt:
          typeof claims.exp === 'number' ? claims.exp * 1000 - startedAtEpoch : since() + ttlSeconds * 1000,
        expiresIn: typeof value.expires_in === 'number' ? value.expires_in : ttlSeconds,
        scope:
          scopesOfClaim(claims.scope) ??
          String(value.scope ?? '')
            .split(' ')
            .filter(Boolean),
        partnerId: typeof claims.partnerId === 'string' ? claims.partnerId : options.partnerId,
        last6: token.slice(-6),
        phase: 'short',
      };
      // The phase is the token's own: a lifetime longer than the short one's (and its second of rounding).
      if (issued.expAt - issued.issuedAt > (ttlSeconds + 1) * 1000) issued.phase = 'long';
      if (listed) tokens.push(issued);
      tokenRefs.set(token, issued);
      tokensByRef.set(issued.ref, issued);
      return issued;
    },
  };
}
