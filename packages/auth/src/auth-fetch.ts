import type { AccessToken } from './access-token.js';
import { findBearerChallenge } from './bearer-challenge.js';
import { BearerInsufficientScopeError, ConfigurationError } from './errors.js';
import type { TokenProvider } from './provider/options.js';

export interface AuthFetchOptions {
  /** The fetch that sends the API requests. Default: globalThis.fetch. */
  fetch?: typeof globalThis.fetch;
  /** The scopes a request needs (e.g. from the operation → scope map). Default: the provider's scopes. */
  scopesFor?: (request: Request) => readonly string[] | undefined;
  /** A 403 `insufficient_scope`: throw BearerInsufficientScopeError (default) or return the response untouched. */
  insufficientScope?: 'throw' | 'return';
}

export type AuthFetch = (input: Request | string | URL, init?: RequestInit) => Promise<Response>;

// Sets the header on the request itself: a Request's headers are mutable, and building a second
// Request per call costs more than the rest of this wrapper (see the SDK's bench).
function withBearer(request: Request, token: AccessToken): Request {
  request.headers.set('authorization', `Bearer ${token.accessToken}`);
  return request;
}

async function discard(response: Response): Promise<void> {
  try {
    await response.body?.cancel();
  } catch {
    // nothing to free
  }
}

/**
 * Replays of one request after a 401: the first for any refused token (RFC 6750 §3: a revoked token, a
 * rotated key), the others only for a token that expired in flight (a stall, a queue, a slow connect).
 */
export const MAX_AUTH_REPLAYS = 3;

/**
 * A fetch that sends `Authorization: Bearer …` from the provider. It sits below openapi-fetch's
 * middleware (which cannot replay bodies): on a 401 with a Bearer challenge (RFC 6750 §3) it drops the
 * token, gets a fresh one and replays the request, with the body kept from before the first try: once,
 * and up to MAX_AUTH_REPLAYS times while the refused token had expired in flight.
 */
export function createAuthFetch(provider: TokenProvider, options: AuthFetchOptions = {}): AuthFetch {
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const mode = options.insufficientScope ?? 'throw';
  if (mode !== 'throw' && mode !== 'return') {
    throw new ConfigurationError(
      `createAuthFetch: insufficientScope must be 'throw' or 'return', got ${JSON.stringify(mode)}.`,
    );
  }

  const checkScope = async (response: Response): Promise<Response> => {
    if (response.status !== 403 || mode === 'return') return response;
    const challenge = findBearerChallenge(response.headers.get('www-authenticate'));
    if (challenge?.params.error !== 'insufficient_scope') return response;
    await discard(response);
    throw new BearerInsufficientScopeError(challenge.params.scope, challenge.params.error_description);
  };

  return async (input, init) => {
    // openapi-fetch hands over a Request of its own: use it as it is instead of copying it.
    const request = input instanceof Request && init === undefined ? input : new Request(input, init);
    const scopes = options.scopesFor?.(request);
    const tokenOptions = { ...(scopes !== undefined ? { scopes } : {}), signal: request.signal };
    // Throws ScopeNotGrantedError before anything is sent when a needed scope was not granted.
    let token = await provider.getToken(tokenOptions);
    // A body can be read once: keep a copy for the replay before the first attempt consumes it.
    const spare = request.body === null ? request : request.clone();
    let sentAt = Date.now();
    let answer = await fetchImpl(withBearer(request, token));
    for (let replays = 0; replays < MAX_AUTH_REPLAYS; replays++) {
      if (answer.status !== 401 || !findBearerChallenge(answer.headers.get('www-authenticate'))) break;
      const answeredAt = Date.now();
      // A second refusal is replayed only when the token had expired by the time it was answered
      // (it expired in flight); one refused while alive (revoked, a rotated key) is returned as is.
      if (replays > 0 && token.expiresAt > answeredAt) break;
      await discard(answer);
      await provider.invalidate(token);
      // The replay's token must outlive a repeat of the delay that made this one expire in flight.
      token = await provider.getToken({ ...tokenOptions, minValidityMs: answeredAt - sentAt });
      const body = replays + 1 < MAX_AUTH_REPLAYS ? spare.clone() : spare;
      sentAt = Date.now();
      answer = await fetchImpl(withBearer(body, token));
    }
    return checkScope(answer);
  };
}
