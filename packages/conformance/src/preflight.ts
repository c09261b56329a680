import { scopes } from '@partner-lending/spec';
import type { CheckContext, TokenOutcome } from './context.js';
import { ConformanceError } from './errors.js';
import { errorCodeOf } from './http-probe.js';

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
    // An empty intersection with all four scopes cannot happen for a client with scopes; ask with none.
    if (!outcome.accessToken && errorCodeOf(outcome.exchange) === 'invalid_scope')
      outcome = await context.requestToken({});
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
      `The token endpoint ${tokenUrl} answered ${exchange.status}${error ? ` ${error}` : ''} without an access_token; expected a client-credentials token (seed §4.1).${exchange.status === 404 ? ' Is --auth-url the address of the authentication service?' : ''}`,
    );
  context.main = outcome;
  try {
    void context.partnerId;
  } catch (cause) {
    throw new ConformanceError(
      'ERR_PREFLIGHT',
      `The token response of ${tokenUrl} holds no partnerId (seed §2.2): the API paths cannot be built.`,
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
