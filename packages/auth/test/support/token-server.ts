import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';

/** A real token server on 127.0.0.1 (random port) for the tests: issues ES256/RS256 JWTs, serves a JWKS. */

export const CLIENT_ID = 'client-4f1c9a';
export const CLIENT_SECRET = 'super-secret-value-9d8e7f6a5b4c';
export const PARTNER_ID = 'partner-123';
export const ALL_SCOPES = ['create:journal_update', 'create:loan_draft', 'create:repayment', 'read:loans'];

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  form: URLSearchParams;
}

export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  body?: string | object;
}

/** Answers one request; `issue()` builds the normal token answer (so a handler can tweak it). */
export type Handler = (
  request: RecordedRequest,
  issue: (overrides?: IssueOverrides) => Promise<Record<string, unknown>>,
) => Reply | Promise<Reply> | 'hang' | 'destroy';

export interface IssueOverrides {
  claims?: Record<string, unknown>;
  /** Remove these claims from the JWT. */
  omitClaims?: string[];
  response?: Record<string, unknown>;
  omitFields?: string[];
  ttlSeconds?: number;
  alg?: 'ES256' | 'RS256' | 'HS256';
}

export interface TokenServer {
  origin: string;
  tokenUrl: string;
  jwksUrl: string;
  issuer: string;
  audience: string;
  requests: RecordedRequest[];
  /** Token requests received (POST /oauth/token). */
  tokenRequests(): number;
  /** Queue handlers for the next token requests, one each, in order. */
  next(...handlers: Handler[]): void;
  /** Handler used when the queue is empty (default: issue a token). */
  fallback: Handler;
  /** Every access token issued so far. */
  issued: string[];
  jwks: { keys: JWK[] };
  close(): Promise<void>;
}

export interface TokenServerOptions {
  now?: () => number;
  ttlSeconds?: number;
  authorisedScopes?: string[];
  audience?: string;
  /** Delay before answering token requests (lets concurrent callers pile up). */
  delayMs?: number;
}

export async function startTokenServer(options: TokenServerOptions = {}): Promise<TokenServer> {
  const now = options.now ?? Date.now;
  const ttl = options.ttlSeconds ?? 3600;
  const authorised = options.authorisedScopes ?? ALL_SCOPES;
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const rsa = await generateKeyPair('RS256', { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid: 'es-1', alg: 'ES256', use: 'sig' };
  const rsaJwk = { ...(await exportJWK(rsa.publicKey)), kid: 'rs-1', alg: 'RS256', use: 'sig' };
  const jwks = { keys: [publicJwk, rsaJwk] };
  const queue: Handler[] = [];
  const requests: RecordedRequest[] = [];
  const issued: string[] = [];
  let tokenCount = 0;
  let issuer = '';
  let audience = options.audience ?? '';

  const issue = async (form: URLSearchParams, o: IssueOverrides = {}) => {
    const requested = (form.get('scope') ?? '').split(' ').filter(Boolean);
    const granted = requested.length === 0 ? authorised : authorised.filter((s) => requested.includes(s));
    const lifetime = o.ttlSeconds ?? ttl;
    const iat = Math.floor(now() / 1000);
    const jti = randomUUID();
    const claims: Record<string, unknown> = {
      iss: issuer,
      aud: [form.get('audience') ?? audience],
      sub: `${CLIENT_ID}@clients`,
      scope: granted,
      partnerId: PARTNER_ID,
      jti,
      iat,
      exp: iat + lifetime,
      ...o.claims,
    };
    for (const name of o.omitClaims ?? []) delete claims[name];
    const alg = o.alg ?? 'ES256';
    const key =
      alg === 'ES256'
        ? privateKey
        : alg === 'RS256'
          ? rsa.privateKey
          : new TextEncoder().encode('x'.repeat(32));
    const jwt = await new SignJWT(claims)
      .setProtectedHeader({
        alg,
        typ: 'at+jwt',
        ...(alg === 'HS256' ? {} : { kid: alg === 'ES256' ? 'es-1' : 'rs-1' }),
      })
      .sign(key);
    issued.push(jwt);
    const response: Record<string, unknown> = {
      access_token: jwt,
      token_type: 'bearer',
      expires_in: lifetime - 1,
      scope: granted.join(' '),
      iss: issuer,
      partnerId: PARTNER_ID,
      jti,
      ...o.response,
    };
    for (const name of o.omitFields ?? []) delete response[name];
    return response;
  };

  const defaultHandler: Handler = async (request, make) => {
    const basic = request.headers.authorization;
    let id = request.form.get('client_id');
    let secret = request.form.get('client_secret');
    if (basic?.startsWith('Basic ')) {
      const [u, p] = Buffer.from(basic.slice(6), 'base64').toString('utf8').split(':');
      id = decodeURIComponent((u ?? '').replace(/\+/g, ' '));
      secret = decodeURIComponent((p ?? '').replace(/\+/g, ' '));
    }
    if (request.form.get('grant_type') !== 'client_credentials') {
      return { status: 400, body: { error: 'unsupported_grant_type' } };
    }
    if (id !== CLIENT_ID || secret !== CLIENT_SECRET) {
      return {
        status: 401,
        body: { error: 'invalid_client', error_description: 'Client authentication failed' },
      };
    }
    return { status: 200, headers: { 'cache-control': 'no-store' }, body: await make() };
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const path = req.url ?? '/';
      if (req.method === 'GET' && path === '/.well-known/jwks.json') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(jwks));
        return;
      }
      if (path !== '/oauth/token') {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not_found"}');
        return;
      }
      tokenCount++;
      const recorded: RecordedRequest = {
        method: req.method ?? '',
        path,
        headers: req.headers,
        body,
        form: new URLSearchParams(body),
      };
      requests.push(recorded);
      if (options.delayMs) await new Promise((r) => setTimeout(r, options.delayMs));
      const handler = queue.shift() ?? api.fallback;
      try {
        const reply = await handler(recorded, (o) => issue(recorded.form, o));
        if (reply === 'hang') return;
        if (reply === 'destroy') {
          req.socket.destroy();
          return;
        }
        const payload =
          typeof reply.body === 'string' || reply.body === undefined
            ? (reply.body ?? '')
            : JSON.stringify(reply.body);
        res
          .writeHead(reply.status ?? 200, {
            ...(typeof reply.body === 'object' ? { 'content-type': 'application/json' } : {}),
            ...reply.headers,
          })
          .end(payload);
      } catch (error) {
        res.writeHead(500).end(String(error));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  issuer = `${origin}/`;
  if (!audience) audience = 'https://partner-api.example';

  const api: TokenServer = {
    origin,
    tokenUrl: `${origin}/oauth/token`,
    jwksUrl: `${origin}/.well-known/jwks.json`,
    issuer,
    audience,
    requests,
    tokenRequests: () => tokenCount,
    next: (...handlers) => {
      queue.push(...handlers);
    },
    fallback: defaultHandler,
    issued,
    jwks,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return api;
}

/** A clock the test moves by hand. */
export function fakeClock(start = Date.UTC(2026, 0, 1)) {
  let t = start;
  return {
    now: () => t,
    advance(ms: number) {
      t += ms;
    },
    set(ms: number) {
      t = ms;
    },
  };
}

/** Records sleeps instead of waiting, so retry tests do not wait for real. */
export function recordingSleep() {
  const waits: number[] = [];
  const sleep = async (ms: number) => {
    waits.push(ms);
  };
  return { sleep, waits };
}
