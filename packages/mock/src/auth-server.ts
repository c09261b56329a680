import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FaultSet } from './faults.js';
import { bodyLimitBytes, type RequestTarget, readBody, sendJson } from './http-io.js';
import type { MockClient } from './mock-client.js';
import type { Exchange } from './mock-server.js';
import {
  authenticateClient,
  isTokenError,
  parseTokenRequest,
  type TokenErrorAnswer,
} from './token-request.js';
import { type IssuerContext, issueToken } from './token-response.js';
import { handleOperatorRevoke, type OperatorContext, operatorRevokePath } from './token-revocation.js';

export const tokenPath = '/oauth/token';
export const jwksPath = '/.well-known/jwks.json';

export interface AuthServerContext extends IssuerContext {
  readonly clients: readonly MockClient[];
  readonly faults: FaultSet;
  /** The operator control (`POST /operator/revoke-tokens`), when an operator key is set. */
  readonly operator?: OperatorContext | undefined;
  countTokenRequest(): void;
}

function noStore(faults: FaultSet): Record<string, string> {
  // RFC 6749 §5.1: token answers must not be cached.
  return faults.has('token-omit-no-store') ? {} : { 'Cache-Control': 'no-store', Pragma: 'no-cache' };
}

function sendTokenError(res: ServerResponse, answer: TokenErrorAnswer, exchange: Exchange, faults: FaultSet) {
  exchange.error = answer.error;
  // RFC 7235 §3.1: a 401 carries a challenge; RFC 6749 §5.2 names Basic for invalid_client.
  const challenge: Record<string, string> =
    answer.status === 401 ? { 'WWW-Authenticate': 'Basic realm="partner-auth", charset="UTF-8"' } : {};
  // RFC 9110 §10.2.3: a 503 may say when to ask again.
  const retry: Record<string, string> =
    answer.retryAfterSeconds === undefined ? {} : { 'Retry-After': String(answer.retryAfterSeconds) };
  if (answer.retryAfterSeconds !== undefined) exchange.retryAfter = String(answer.retryAfterSeconds);
  sendJson(
    res,
    answer.status,
    { error: answer.error, error_description: answer.description },
    { ...noStore(faults), ...challenge, ...retry },
  );
}

async function handleToken(
  req: IncomingMessage,
  res: ServerResponse,
  context: AuthServerContext,
  exchange: Exchange,
) {
  context.countTokenRequest();
  const { faults } = context;
  const body = await readBody(req, bodyLimitBytes);
  if (body.kind === 'aborted') return;
  if (body.kind === 'too-large') {
    return sendTokenError(
      res,
      { status: 400, error: 'invalid_request', description: 'the body is larger than 1 MiB' },
      exchange,
      faults,
    );
  }
  const request = parseTokenRequest(req.headers, body.body);
  if (isTokenError(request)) return sendTokenError(res, request, exchange, faults);
  const client = authenticateClient(request, context.clients, faults);
  if (isTokenError(client)) return sendTokenError(res, client, exchange, faults);
  exchange.partnerId = client.partnerId;
  exchange.grantType = request.grantType ?? '';
  const answer = await issueToken(request, client, context);
  if (isTokenError(answer)) return sendTokenError(res, answer, exchange, faults);
  context.operator?.revocations.issued(client.partnerId, answer.access_token);
  exchange.issued = { token: answer.access_token, scope: answer.scope, expiresIn: answer.expires_in };
  sendJson(res, 200, answer, noStore(faults));
}

/** The authentication service: POST /oauth/token and GET /.well-known/jwks.json. */
export async function handleAuthRequest(
  req: IncomingMessage,
  res: ServerResponse,
  context: AuthServerContext,
  exchange: Exchange,
  target: RequestTarget,
): Promise<void> {
  if (context.operator !== undefined && target.pathname === operatorRevokePath)
    return handleOperatorRevoke(req, res, context.operator, exchange);
  const route = target.pathname === tokenPath ? 'POST' : target.pathname === jwksPath ? 'GET' : undefined;
  if (route === undefined) {
    exchange.error = 'not_found';
    return sendJson(res, 404, {
      error: 'not_found',
      error_description: `no such path; the token endpoint is ${tokenPath}, the JWKS ${jwksPath}`,
    });
  }
  if (req.method !== route) {
    exchange.error = 'method_not_allowed';
    return sendJson(
      res,
      405,
      { error: 'method_not_allowed', error_description: `${target.pathname} accepts ${route} only` },
      { Allow: route },
    );
  }
  if (route === 'GET') return sendJson(res, 200, context.keys.jwks(), { 'Cache-Control': 'no-cache' });
  return handleToken(req, res, context, exchange);
}
