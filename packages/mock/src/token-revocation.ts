import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AccessTokenClaims } from './access-token.js';
import { formatBearerChallenge } from './bearer-challenge.js';
import { MockError } from './errors.js';
import { mediaType, readBody, sendJson } from './http-io.js';
import type { Exchange } from './mock-server.js';

/**
 * Token revocation for the vendor's incident response: `POST /operator/revoke-tokens` (on the auth
 * server, enabled by an operator key) revokes every token issued to a partner so far; the API then
 * refuses them with 401 invalid_token, "the token was revoked", while new token requests are answered
 * as before. Kept in memory: a restarted gate signs with a new key anyway (unless `signingKey` is
 * given), which ends every earlier token.
 */

export const operatorRevokePath = '/operator/revoke-tokens';

/** Most tokens told apart from revoked ones in the very second of a revocation, per partner. */
const exemptLimit = 10_000;

interface Revocation {
  /** Epoch seconds of the revocation: tokens with an earlier `iat` are revoked. */
  readonly second: number;
  /** When it was asked, epoch ms. */
  readonly at: number;
  /** Tokens issued after the revocation within its own second (`iat` === `second`), by jti. */
  readonly exempt: Set<string>;
}

/** The operator key: one word of at least 16 characters. */
export function checkOperatorKey(key: unknown): string {
  if (typeof key !== 'string' || !/^\S{16,4096}$/.test(key.trim()))
    throw new MockError(
      'ERR_MOCK_OPTIONS',
      'startMock: operatorKey must be one word of at least 16 characters (e.g. from `openssl rand -base64 32`).',
    );
  return key.trim();
}

export class TokenRevocations {
  readonly #byPartner = new Map<string, Revocation>();
  readonly #clock: () => number;

  constructor(clock: () => number) {
    this.#clock = clock;
  }

  /** Revokes every token issued to `partnerId` until now. */
  revoke(partnerId: string): { revokedAt: string } {
    const at = this.#clock();
    this.#byPartner.set(partnerId, { second: Math.floor(at / 1000), at, exempt: new Set() });
    return { revokedAt: new Date(at).toISOString() };
  }

  /** A token was issued: one issued in the second of a revocation, after it, stays valid. */
  issued(partnerId: string, accessToken: string): void {
    const revocation = this.#byPartner.get(partnerId);
    if (revocation === undefined || revocation.exempt.size >= exemptLimit) return;
    let payload: { iat?: unknown; jti?: unknown } = {};
    try {
      payload = JSON.parse(Buffer.from(accessToken.split('.')[1] ?? '', 'base64url').toString('utf8'));
    } catch {
      return;
    }
    if (payload.iat === revocation.second && typeof payload.jti === 'string')
      revocation.exempt.add(payload.jti);
  }

  /** Whether a token the API verified was revoked by the operator. */
  revoked(claims: AccessTokenClaims): boolean {
    const revocation = this.#byPartner.get(claims.partnerId);
    if (revocation === undefined) return false;
    // A token without iat cannot say it came after the revocation.
    if (claims.issuedAt === undefined || claims.issuedAt < revocation.second) return true;
    if (claims.issuedAt > revocation.second) return false;
    return claims.jti === undefined || !revocation.exempt.has(claims.jti);
  }
}

export interface OperatorContext {
  readonly key: string;
  readonly revocations: TokenRevocations;
  /** Partner ids of the client registry: a revocation names one of them. */
  readonly partnerIds: ReadonlySet<string>;
}

const digest = (value: string) => createHash('sha256').update(value).digest();

/** Constant-time comparison of the presented Authorization header with `Bearer <key>`. */
function authorised(header: string | undefined, key: string): boolean {
  const match = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? '');
  // Digests of equal length, so that neither the length nor the content leaks through timing.
  return timingSafeEqual(digest(match?.[1] ?? ''), digest(key)) && match !== null;
}

/** `POST /operator/revoke-tokens` with `{ "partnerId" }` and the operator key as a bearer token. */
export async function handleOperatorRevoke(
  req: IncomingMessage,
  res: ServerResponse,
  context: OperatorContext,
  exchange: Exchange,
): Promise<void> {
  if (req.method !== 'POST') {
    exchange.error = 'method_not_allowed';
    return sendJson(
      res,
      405,
      { error: 'method_not_allowed', error_description: `${operatorRevokePath} accepts POST only` },
      { Allow: 'POST' },
    );
  }
  if (!authorised(req.headers.authorization, context.key)) {
    exchange.error = 'unauthorized';
    return sendJson(
      res,
      401,
      {
        error: 'unauthorized',
        error_description: 'send the operator key (--operator-key-file) as "Authorization: Bearer <key>"',
      },
      { 'WWW-Authenticate': formatBearerChallenge({ realm: 'partner-mock-operator' }) },
    );
  }
  const badRequest = (description: string) => {
    exchange.error = 'invalid_request';
    sendJson(res, 400, { error: 'invalid_request', error_description: description });
  };
  const body = await readBody(req, 4096);
  if (body.kind === 'aborted') return;
  const expected = 'the body must be a JSON object { "partnerId": "<partner id>" } sent as application/json';
  if (body.kind === 'too-large' || mediaType(req.headers['content-type']) !== 'application/json')
    return badRequest(expected);
  let value: unknown;
  try {
    value = JSON.parse(body.body.toString('utf8'));
  } catch {
    return badRequest(expected);
  }
  const partnerId = (value as { partnerId?: unknown } | null)?.partnerId;
  if (typeof partnerId !== 'string' || partnerId === '') return badRequest(expected);
  if (!context.partnerIds.has(partnerId)) {
    exchange.error = 'not_found';
    return sendJson(res, 404, {
      error: 'not_found',
      error_description: `no client of this gate belongs to partner ${JSON.stringify(partnerId.slice(0, 200))}; check the partner id against the clients file`,
    });
  }
  const { revokedAt } = context.revocations.revoke(partnerId);
  sendJson(res, 200, { partnerId, revokedAt, revoked: 'every token issued to this partner until now' });
}
