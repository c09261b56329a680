import { scopes } from '@partner-lending/spec';
import { ConformanceError } from '../errors.js';
import type { CheckContext, TokenOutcome } from './context.js';
import { errorCodeOf } from './http/probe.js';

function unreachable(what: string, url: string, flag: string, error: unknown): ConformanceError {
  const reason = error instanceof Error ? error.message.replace(/^\w+ \S+ failed: /, '') : String(error);
  return new ConformanceError(
    'ERR_UNREACHABLE',
    `Cannot reach the ${what} at ${url}: ${reason}. Check ${flag} and that the service is running.`,
    { cause: error },
  );
}

/**
 * Reaches the token endpoint, gets one token (asking for every scope) and makes one authorised call.
 * Throws ERR_UNREACHABLE (exit 3) when either server cannot be reached, ERR_CREDENTIALS when the client
 * credentials are refused, ERR_PREFLIGHT when the token endpoint does not answer like one. A refused API
 * call is not fatal: the positive-control checks report it.
 */
export async function preflight(context: CheckContext): Promise<TokenOutcome> {
  const { tokenUrl, baseUrl } = context.target;
  let outcome: TokenOutcome;
  try {
    // Sorted: the canonical ask, so that A is learned even from a server that minds the order (scope-order
    // reports that separately).
    outcome = await context.requestToken({ scopes: [...scopes].sort() });
    context.allScopesAsk = outcome;
    const refusal = errorCodeOf(outcome.exchange);
    // A strict server refuses to grant a subset (invalid_scope, invalid_target): learn A another way, so
    // that every other check still runs with real tokens; scope-authorised-set reports the refusal.
    if (!outcome.accessToken && (refusal === 'invalid_scope' || refusal === 'invalid_target')) {
      const expected = context.settings.expectScopes;
      const singles = await Promise.all(scopes.map((scope) => context.tokenFor([scope])));
      const learned = scopes.filter((scope, index) => (singles[index]!.granted ?? []).includes(scope));
      const ask = learned.length > 0 ? learned : expected;
      outcome = await context.requestToken(ask && ask.length > 0 ? { scopes: [...ask].sort() } : {});
      context.preflightNotes.push(
        `asking for every scope got ${context.describe(context.allScopesAsk.exchange)}; the authorised set was learned one scope at a time: ${learned.length > 0 ? learned.join(' ') : `none granted${expected ? `, using --expect-scopes ${expected.join(' ')}` : ''}`}`,
      );
    }
    // An opaque token, where a JWT was expected: the server may have ignored `audience` and want RFC 8707
    // `resource` instead. Ask once more with it.
    if (outcome.accessToken && !outcome.jwt) {
      context.useResource = true;
      const retry = await context.requestToken({ scopes: outcome.requested });
      if (retry.jwt) {
        outcome = retry;
        context.preflightNotes.push(
          'the token endpoint ignored `audience` and issued an opaque token; with the RFC 8707 `resource` parameter it issued a JWT, so every token request of this run also sends `resource`',
        );
      } else context.useResource = false;
    }
  } catch (error) {
    throw unreachable('token endpoint', tokenUrl, '--auth-url', error);
  }
  const { exchange } = outcome;
  const error = errorCodeOf(exchange);
  if (error === 'invalid_client' || exchange.status === 401)
    throw new ConformanceError(
      'ERR_CREDENTIALS',
      `The token endpoint ${tokenUrl} refused the client credentials (${exchange.status}${error ? ` ${error}` : ''}). Check PARTNER_CLIENT_ID and PARTNER_CLIENT_SECRET: they come from the partner administration console of this environment.`,
    );
  if (!outcome.accessToken)
    throw new ConformanceError(
      'ERR_PREFLIGHT',
      `The token endpoint ${tokenUrl} answered ${exchange.status}${error ? ` ${error}` : ''} without an access_token; expected a client-credentials token (API documentation §4.1).${exchange.status === 404 ? ' Is --auth-url the address of the authentication service?' : ''}${error === 'invalid_scope' || error === 'invalid_target' ? ' Asking for every scope, then for each scope alone, was refused: give --expect-scopes with the scopes the partner console shows, and check --audience.' : ''}`,
    );
  context.main = outcome;
  try {
    void context.partnerId;
  } catch (cause) {
    throw new ConformanceError(
      'ERR_PREFLIGHT',
      `The token response of ${tokenUrl} holds no partnerId (API documentation §2.2), nor does the token${outcome.jwt ? '' : ' (opaque: the token endpoint ignored `audience` and issued an opaque token, also when asked with the RFC 8707 `resource` parameter)'}: the API paths cannot be built.`,
      { cause },
    );
  }
  try {
    await context.callApi('listLoans');
  } catch (error) {
    throw unreachable('partner API', baseUrl, '--base-url', error);
  }
  return outcome;
}
