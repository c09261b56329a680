import type { IncomingHttpHeaders } from 'node:http';
import type { FaultSet } from './faults.js';
import { mediaType } from './http-io.js';
import { type MockClient, secretMatches } from './mock-client.js';

/** An RFC 6749 §5.2 error answer of the token endpoint. */
export interface TokenErrorAnswer {
  readonly status: 400 | 401 | 403 | 503;
  readonly error:
    | 'invalid_request'
    | 'invalid_client'
    | 'unauthorized_client'
    | 'unsupported_grant_type'
    | 'invalid_scope'
    | 'access_denied'
    | 'temporarily_unavailable';
  readonly description: string;
  /** Seconds to wait before asking again (`Retry-After`), for a 503. */
  readonly retryAfterSeconds?: number;
}

/** A syntactically valid token request (RFC 6749 §4.4.2), not yet authenticated. */
export interface TokenRequest {
  readonly grantType: string | undefined;
  readonly scope: string | undefined;
  readonly audience: string | undefined;
  readonly clientAuth: 'basic' | 'body' | 'none';
  readonly clientId: string | undefined;
  readonly clientSecret: string | undefined;
}

export const isTokenError = (value: unknown): value is TokenErrorAnswer =>
  typeof value === 'object' && value !== null && 'error' in value && 'status' in value;

const invalidRequest = (description: string): TokenErrorAnswer => ({
  status: 400,
  error: 'invalid_request',
  description,
});
const invalidClient = (description: string): TokenErrorAnswer => ({
  status: 401,
  error: 'invalid_client',
  description,
});

// RFC 6749 §2.3.1: client id and secret are form-encoded before Basic encoding.
function formDecode(value: string): string | undefined {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

function parseBasic(
  header: string,
): { clientId: string; clientSecret: string } | TokenErrorAnswer | undefined {
  const match = /^basic(?: +(.*))?$/i.exec(header.trim());
  if (!match) return undefined;
  const credentials = (match[1] ?? '').trim();
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(credentials))
    return invalidClient('the Basic credentials are not base64');
  const decoded = Buffer.from(credentials, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon === -1) return invalidClient('the Basic credentials hold no "client_id:client_secret" pair');
  const clientId = formDecode(decoded.slice(0, colon));
  const clientSecret = formDecode(decoded.slice(colon + 1));
  if (clientId === undefined || clientSecret === undefined)
    return invalidClient('the Basic credentials are not form-encoded');
  return { clientId, clientSecret };
}

/** Parses the body and headers of a token request; answers invalid_request for malformed ones. */
export function parseTokenRequest(
  headers: IncomingHttpHeaders,
  body: Buffer,
): TokenRequest | TokenErrorAnswer {
  if (mediaType(headers['content-type']) !== 'application/x-www-form-urlencoded')
    return invalidRequest('the body must be application/x-www-form-urlencoded (RFC 6749 §4.4.2)');
  const text = body.toString('utf8');
  if (text.includes('\uFFFD')) return invalidRequest('the body is not valid UTF-8');
  const form = new URLSearchParams(text);
  const seen = new Set<string>();
  for (const key of form.keys()) {
    // RFC 6749 §3.2: parameters must not be included more than once.
    if (seen.has(key)) return invalidRequest(`the parameter ${key} is repeated (RFC 6749 §3.2)`);
    seen.add(key);
  }
  const field = (name: string) => form.get(name) ?? undefined;
  const base = { grantType: field('grant_type'), scope: field('scope'), audience: field('audience') };
  const authorization = headers.authorization;
  const basic = authorization === undefined ? undefined : parseBasic(authorization);
  if (basic !== undefined) {
    if (isTokenError(basic)) return basic;
    if (form.has('client_secret'))
      return invalidRequest('use one client authentication method: HTTP Basic or body fields, not both');
    const bodyId = field('client_id');
    if (bodyId !== undefined && bodyId !== basic.clientId)
      return invalidRequest('client_id in the body differs from the one in the Basic credentials');
    return { ...base, clientAuth: 'basic', ...basic };
  }
  const clientId = field('client_id');
  const clientSecret = field('client_secret');
  if (clientId === undefined && clientSecret === undefined)
    return { ...base, clientAuth: 'none', clientId, clientSecret };
  return { ...base, clientAuth: 'body', clientId, clientSecret };
}

/** Client authentication (RFC 6749 §2.3): the registered client, or a 401 invalid_client. */
export function authenticateClient(
  request: TokenRequest,
  clients: readonly MockClient[],
  faults: FaultSet,
): MockClient | TokenErrorAnswer {
  if (request.clientAuth === 'none') {
    if (faults.has('token-accept-missing-credentials') && clients[0]) return clients[0];
    return invalidClient(
      'no client authentication was included: send client_id and client_secret as body fields or HTTP Basic',
    );
  }
  if (request.clientId === undefined || request.clientId === '') return invalidClient('client_id is missing');
  const client = clients.find((candidate) => candidate.clientId === request.clientId);
  if (!client) return invalidClient('client authentication failed: unknown client or wrong secret');
  if (faults.has('token-accept-wrong-secret')) return client;
  if (request.clientSecret === undefined || !secretMatches(request.clientSecret, client.clientSecret))
    return invalidClient('client authentication failed: unknown client or wrong secret');
  return client;
}
