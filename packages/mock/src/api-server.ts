import type { IncomingMessage, ServerResponse } from 'node:http';
import { type ApiOperationId, matchPath, operations, scopeFor } from '@partner-lending/spec';
import { type AccessTokenClaims, type ValidatorContext, validateAccessToken } from './access-token.js';
import { formatBearerChallenge } from './bearer-challenge.js';
import type { BoundedCache } from './bounded-cache.js';
import {
  type BodyResult,
  bodyLimitBytes,
  exceedsJsonDepth,
  jsonDepthLimit,
  mediaType,
  type RequestTarget,
  readBody,
  sendJson,
  sendJsonText,
} from './http-io.js';
import { type PartnerStore, parsePaging } from './loans.js';
import { type Exchange, InjectedCrash } from './mock-server.js';
import type { TokenRevocations } from './token-revocation.js';

export const realm = 'partner-api';

/** A serialised loans page and its size in bytes. */
export interface CachedPage {
  readonly json: string;
  readonly length: number;
}

export interface ApiServerContext extends ValidatorContext {
  readonly store: PartnerStore;
  /** Serialised loans pages by partner, offset and limit (the demo loans never change). */
  readonly pages?: BoundedCache<string, CachedPage>;
  /** Tokens the operator revoked (`POST /operator/revoke-tokens`), when an operator key is set. */
  readonly revocations?: TokenRevocations | undefined;
}

type Credentials =
  | { kind: 'token'; token: string }
  | { kind: 'none'; hint: string }
  | { kind: 'malformed'; description: string }
  | { kind: 'error'; status: 400 | 413; description: string };

// RFC 6750 §2.1 b64token.
const b64token = /^[A-Za-z0-9\-._~+/]+=*$/;

function schemeAccepted(scheme: string, context: ApiServerContext): boolean {
  if (context.faults.has('api-accept-any-scheme')) return true;
  if (context.faults.has('api-bearer-case-sensitive')) return scheme === 'Bearer';
  // RFC 9110 §11.1: auth schemes are case-insensitive.
  return scheme.toLowerCase() === 'bearer';
}

function bodyToken(body: BodyResult, contentType: string | undefined): string | undefined {
  if (body.kind !== 'ok') return undefined;
  const text = body.body.toString('utf8');
  const type = mediaType(contentType);
  if (type === 'application/x-www-form-urlencoded')
    return new URLSearchParams(text).get('access_token') ?? undefined;
  if (type === 'application/json') {
    if (exceedsJsonDepth(text, jsonDepthLimit)) return undefined;
    try {
      const value: unknown = JSON.parse(text);
      if (typeof value === 'object' && value !== null && 'access_token' in value) {
        const token = (value as { access_token: unknown }).access_token;
        return typeof token === 'string' ? token : undefined;
      }
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** RFC 6750 §2: the token comes from the Authorization header only (unless a fault says otherwise). */
function extractCredentials(
  req: IncomingMessage,
  query: URLSearchParams,
  body: BodyResult | undefined,
  context: ApiServerContext,
): Credentials {
  const header = req.headers.authorization;
  if (header === undefined || header.trim() === '') {
    if (context.faults.has('api-accept-query-token')) {
      const token = query.get('access_token');
      if (token) return { kind: 'token', token };
    }
    if (body !== undefined) {
      const token = bodyToken(body, req.headers['content-type']);
      if (token) return { kind: 'token', token };
    }
    return { kind: 'none', hint: 'send the access token as "Authorization: Bearer <token>"' };
  }
  const match = /^(\S+)(?:[ \t]+(.*))?$/s.exec(header.trim());
  const scheme = match?.[1] ?? '';
  if (!schemeAccepted(scheme, context))
    return { kind: 'none', hint: 'the Authorization header must use the Bearer scheme' };
  const credentials = (match?.[2] ?? '').trim();
  if (!b64token.test(credentials))
    return { kind: 'malformed', description: 'the Authorization header holds no well-formed bearer token' };
  if (query.has('access_token'))
    return {
      kind: 'error',
      status: 400,
      description: 'the access token was sent by more than one method (RFC 6750 §2)',
    };
  return { kind: 'token', token: credentials };
}

function unauthorized(
  res: ServerResponse,
  context: ApiServerContext,
  exchange: Exchange,
  error: 'invalid_token' | undefined,
  description: string,
): void {
  exchange.error = error ?? 'unauthorized';
  const withError = error !== undefined && !context.faults.has('api-challenge-without-error');
  const challenge = withError
    ? formatBearerChallenge({ error, errorDescription: description })
    : formatBearerChallenge({ realm });
  const headers: Record<string, string> = context.faults.has('api-omit-challenge')
    ? {}
    : { 'WWW-Authenticate': challenge };
  sendJson(res, 401, { error: error ?? 'unauthorized', error_description: description }, headers);
}

async function authorize(
  req: IncomingMessage,
  res: ServerResponse,
  query: URLSearchParams,
  body: BodyResult | undefined,
  context: ApiServerContext,
  exchange: Exchange,
): Promise<AccessTokenClaims | undefined> {
  const credentials = extractCredentials(req, query, body, context);
  if (credentials.kind === 'none')
    return void unauthorized(res, context, exchange, undefined, credentials.hint);
  if (credentials.kind === 'error') {
    exchange.error = 'invalid_request';
    return void sendJson(
      res,
      credentials.status,
      { error: 'invalid_request', error_description: credentials.description },
      {
        'WWW-Authenticate': formatBearerChallenge({
          error: 'invalid_request',
          errorDescription: credentials.description,
        }),
      },
    );
  }
  if (credentials.kind === 'malformed') {
    if (context.faults.has('api-crash-on-malformed-header')) throw new InjectedCrash(credentials.description);
    return void unauthorized(res, context, exchange, 'invalid_token', credentials.description);
  }
  exchange.presented = credentials.token;
  const result = await validateAccessToken(credentials.token, context);
  if (!result.valid) {
    if (result.malformed && context.faults.has('api-crash-on-malformed-header'))
      throw new InjectedCrash(result.description);
    if (result.partnerId !== undefined) exchange.tokenPartnerId = result.partnerId;
    return void unauthorized(res, context, exchange, 'invalid_token', result.description);
  }
  if (context.faults.has('api-reject-valid-tokens'))
    return void unauthorized(res, context, exchange, 'invalid_token', 'the access token is invalid');
  if (context.revocations?.revoked(result.claims)) {
    exchange.tokenPartnerId = result.claims.partnerId;
    return void unauthorized(res, context, exchange, 'invalid_token', 'the token was revoked');
  }
  exchange.partnerId = result.claims.partnerId;
  return result.claims;
}

function sendLoans(
  res: ServerResponse,
  query: URLSearchParams,
  partnerId: string,
  context: ApiServerContext,
  exchange: Exchange,
) {
  // `limit` above 100 is refused 400: the mock's bound, not the API's (the Partner Lending API
  // documentation specifies none); the OpenAPI document says so and states it as `x-mock-maximum`.
  const paging = parsePaging(query);
  if (!paging.ok) {
    exchange.error = 'invalid_request';
    return sendJson(res, 400, { error: 'invalid_request', error_description: paging.description });
  }
  const all = context.store.loans(partnerId);
  const headers = { 'X-Total-Count': String(all.length) };
  const undocumented = context.faults.has('api-undocumented-response');
  // Every offset past the end gives the same empty page: one cache entry for them.
  const key = `${paging.offset >= all.length ? 'end' : paging.offset} ${paging.limit} ${partnerId}`;
  const cached = undocumented ? undefined : context.pages?.get(key);
  if (cached !== undefined) return sendJsonText(res, 200, cached.json, headers, cached.length);
  const page = all.slice(paging.offset, paging.offset + paging.limit);
  if (undocumented) {
    const text = JSON.stringify(page);
    res.writeHead(200, {
      ...headers,
      'Content-Type': 'text/plain',
      'Content-Length': Buffer.byteLength(text),
    });
    return void res.end(text);
  }
  // Kept as a string: node:http then sends headers and body in one write.
  const json = JSON.stringify(page);
  const length = Buffer.byteLength(json);
  context.pages?.set(key, { json, length });
  sendJsonText(res, 200, json, headers, length);
}

async function sendCreated(
  req: IncomingMessage,
  res: ServerResponse,
  operationId: ApiOperationId,
  partnerId: string,
  body: BodyResult | undefined,
  context: ApiServerContext,
  exchange: Exchange,
) {
  const badRequest = (description: string) => {
    exchange.error = 'invalid_request';
    sendJson(res, 400, { error: 'invalid_request', error_description: description });
  };
  if (mediaType(req.headers['content-type']) !== 'application/json')
    return badRequest('the body must be a JSON object sent as Content-Type: application/json');
  const read = body ?? (await readBody(req, bodyLimit(context)));
  if (read.kind === 'aborted') return;
  if (read.kind === 'too-large') {
    exchange.error = 'invalid_request';
    return sendJson(res, 413, {
      error: 'invalid_request',
      error_description: 'the body is larger than 1 MiB',
    });
  }
  const text = read.body.toString('utf8');
  if (exceedsJsonDepth(text, jsonDepthLimit))
    return badRequest(`the JSON body nests deeper than ${jsonDepthLimit} levels; send a flatter object`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return badRequest('the body is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return badRequest('the body must be a JSON object');
  sendJsonText(res, 201, context.store.create(partnerId, operationId, value as Record<string, unknown>));
}

const bodyLimit = (context: ApiServerContext) =>
  context.faults.has('api-no-body-limit') ? 32 * bodyLimitBytes : bodyLimitBytes;

// The API's [method, operationId] pairs of a matched path, computed once per path of the spec.
const apiMethods = new WeakMap<object, [string, ApiOperationId][]>();
function apiMethodsOf(methods: Readonly<Record<string, string>>): [string, ApiOperationId][] {
  let pairs = apiMethods.get(methods);
  if (pairs === undefined) {
    pairs = Object.entries(methods).filter(
      (pair): pair is [string, ApiOperationId] =>
        operations[pair[1] as keyof typeof operations].server === 'api',
    );
    apiMethods.set(methods, pairs);
  }
  return pairs;
}

/** The partner API: the four v3 paths, routes and scopes from @partner-lending/spec. */
export async function handleApiRequest(
  req: IncomingMessage,
  res: ServerResponse,
  context: ApiServerContext,
  exchange: Exchange,
  target: RequestTarget,
): Promise<void> {
  const match = matchPath(target.pathname);
  const methods = match ? apiMethodsOf(match.methods) : [];
  const partnerId = match?.params.partner_id;
  if (!match || methods.length === 0 || partnerId === undefined) {
    exchange.error = 'not_found';
    return sendJson(res, 404, { error: 'not_found', error_description: 'no such path' });
  }
  const operation = methods.find(([method]) => method === req.method);
  if (!operation) {
    const allow = methods.map(([method]) => method).join(', ');
    exchange.error = 'method_not_allowed';
    return sendJson(
      res,
      405,
      { error: 'method_not_allowed', error_description: `this path accepts ${allow}` },
      { Allow: allow },
    );
  }
  const operationId = operation[1];
  const query = new URLSearchParams(target.query);
  // Only the api-accept-body-token fault reads the body before authentication.
  const body =
    context.faults.has('api-accept-body-token') && req.headers.authorization === undefined
      ? await readBody(req, bodyLimit(context))
      : undefined;
  if (body?.kind === 'aborted') return;
  const claims = await authorize(req, res, query, body, context, exchange);
  if (!claims) return;
  const required = scopeFor(operationId);
  if (!context.faults.has('api-ignore-scope') && !claims.scopes.includes(required)) {
    exchange.error = 'insufficient_scope';
    const status = context.faults.has('api-insufficient-scope-401') ? 401 : 403;
    return sendJson(
      res,
      status,
      { error: 'insufficient_scope', error_description: `this operation requires the ${required} scope` },
      { 'WWW-Authenticate': formatBearerChallenge({ error: 'insufficient_scope', scope: required }) },
    );
  }
  if (!context.faults.has('api-skip-partner-isolation') && claims.partnerId !== partnerId) {
    exchange.error = 'access_denied';
    return sendJson(
      res,
      403,
      {
        error: 'access_denied',
        error_description: 'the access token belongs to another partner than the partner_id of the path',
      },
      { 'WWW-Authenticate': formatBearerChallenge({ realm }) },
    );
  }
  if (!context.store.has(partnerId)) {
    exchange.error = 'not_found';
    return sendJson(res, 404, { error: 'not_found', error_description: 'no such partner' });
  }
  if (operationId === 'listLoans') return sendLoans(res, query, partnerId, context, exchange);
  return sendCreated(req, res, operationId, partnerId, body, context, exchange);
}
