import { createHash, randomBytes } from 'node:crypto';
import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { Readable } from 'node:stream';
import { type RunningMock, startMock } from '@partner-lending/mock';
import { scopes as allScopes, matchPath, operations } from '@partner-lending/spec';
import { usageError } from '../errors.js';
import { decodeJwt, scopesOfClaim } from '../shared/jwt.js';
import { mediaTypeOfValue as mediaType } from '../shared/media-type.js';
import { Redactor } from '../shared/redact.js';
import { tool } from '../version.js';
import type {
  BodyKind,
  ClientSession,
  IssuedToken,
  JourneyRecord,
  Leak,
  RecordedExchange,
  ScenarioName,
  ScenarioRecord,
  TokenForm,
} from './session.js';

/** The scenario steps a stage can play; `--scenario NAME…` picks some, `--no-faults` none. */
export const scenarioNames: readonly ScenarioName[] = [
  'revocation',
  'throttle',
  'unavailable',
  'narrowed-grant',
];

/** Which eligible API call (1-based) triggers the revocation and the throttle. */
export const revocationCall = 3;
export const throttleCall = 6;
/** `Retry-After` of the 429 and of the 503, in seconds. */
export const throttleRetryAfterSeconds = 2;
export const unavailableRetryAfterSeconds = 1;
/** The grant of the stage's client under `narrowed-grant` unless `--scopes` says otherwise. */
export const defaultScopes = ['read:loans', 'create:loan_draft'];
/** Default token lifetime: a 30-second journey crosses at least two lifetimes. */
export const defaultTtlSeconds = 10;
/** Default delay of every token answer, so that concurrent token requests overlap visibly. */
export const defaultTokenDelayMs = 100;
/** Default delay before an API call is answered, so that concurrent calls overlap visibly. */
export const defaultApiDelayMs = 20;
/** Default cap of the recorded exchanges; past it exchanges are counted, not kept. */
export const defaultMaxExchanges = 50_000;
/** Largest request body the stage reads (the mock's own limit); past it the request is refused. */
const maxBodyBytes = 1024 * 1024;
/** How much of a body the session keeps, redacted. */
const keptText = 300;

export function scenarioPlans(ttlSeconds: number, grant: readonly string[]): Record<ScenarioName, string> {
  return {
    revocation: `the token of the ${ordinal(revocationCall)} API call that would have succeeded is revoked at that call: it and every later call carrying that token get 401 invalid_token`,
    throttle: `the ${ordinal(throttleCall)} API call that would have succeeded gets 429 with Retry-After: ${throttleRetryAfterSeconds}`,
    unavailable: `the first create (POST) that would have succeeded gets 503 with Retry-After: ${unavailableRetryAfterSeconds}; nothing is created`,
    'narrowed-grant': `the client is authorised for ${grant.join(' ')} only (not all four scopes); a token's scope is requested ∩ authorised, and an operation outside it gets 403 insufficient_scope (tokens live ${ttlSeconds} s throughout)`,
  };
}

function ordinal(n: number): string {
  const suffix =
    n % 10 === 1 && n !== 11
      ? 'st'
      : n % 10 === 2 && n !== 12
        ? 'nd'
        : n % 10 === 3 && n !== 13
          ? 'rd'
          : 'th';
  return `${n}${suffix}`;
}

export interface StageOptions {
  /** Lifetime of issued tokens in seconds. Default 10. */
  ttlSeconds?: number;
  /** The grant of the stage's client under `narrowed-grant`. Default read:loans create:loan_draft. */
  scopes?: readonly string[];
  /** The scenario steps to play. Default all of `scenarioNames`. */
  scenarios?: readonly ScenarioName[];
  /** Interface to listen on. Default 127.0.0.1. */
  listen?: string;
  /** Origin (scheme and host, no port) the journey reaches the stage by, when not the listen address. */
  publicUrl?: string;
  /** Port of the partner API. Default 0 (random). */
  port?: number;
  /** Port of the token endpoint. Default 0 (random). */
  authPort?: number;
  /** Delay of every token answer in ms. Default 100. */
  tokenDelayMs?: number;
  /** Delay before every API call is answered, in ms. Default 20. */
  apiDelayMs?: number;
  /** Recorded exchanges at most. Default 50000. */
  maxExchanges?: number;
  /** Epoch ms clock. Default Date.now. */
  clock?: () => number;
}

/** The credentials and addresses handed to the journey. */
export interface StageClient {
  clientId: string;
  clientSecret: string;
  partnerId: string;
  authorizedScopes: string[];
}

export interface RunningStage {
  readonly authUrl: string;
  readonly baseUrl: string;
  readonly tokenUrl: string;
  readonly audience: string;
  readonly client: StageClient;
  /** Environment variables for the journey (secret included). */
  env(): Record<string, string>;
  /** The session so far; `journey` completes it. */
  session(journey: JourneyRecord): ClientSession;
  /** Number of exchanges received so far. */
  exchangeCount(): number;
  close(): Promise<void>;
}

function listenOn(server: Server, host: string, port: number, what: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        usageError(
          error.code === 'EADDRINUSE'
            ? `${what} port ${port} is already in use on ${host}; choose another (${what === 'the partner API' ? '--port' : '--auth-port'}) or 0 for a random one`
            : `could not listen on ${host}:${port} for ${what}: ${error.message}`,
        ),
      ),
    );
    server.listen(port, host, () => {
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : port);
    });
  });
}

const hostOf = (host: string) => (host.includes(':') ? `[${host}]` : host);

function readBody(req: IncomingMessage): Promise<Buffer | 'too-large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBodyBytes) {
        req.removeAllListeners('data');
        req.resume();
        resolve('too-large');
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function bodyKindOf(body: Buffer, contentType: string | undefined): BodyKind {
  if (body.length === 0) return 'none';
  const type = mediaType(contentType);
  if (type === 'application/x-www-form-urlencoded') return 'form';
  if (type === 'application/json' || type.endsWith('+json')) {
    try {
      const value: unknown = JSON.parse(body.toString('utf8'));
      return typeof value === 'object' && value !== null && !Array.isArray(value)
        ? 'json-object'
        : 'json-other';
    } catch {
      return 'invalid-json';
    }
  }
  return 'other';
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

function basicCredentials(header: string | undefined): { id: string; secret: string } | undefined {
  const match = /^basic\s+(\S+)\s*$/i.exec(header ?? '');
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { id: safeDecode(decoded.slice(0, colon)), secret: safeDecode(decoded.slice(colon + 1)) };
}

const jwtCandidates = /[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g;

// RFC 6750 §2.1: credentials = "Bearer" 1*SP b64token (the scheme is case-insensitive, RFC 9110 §11.1).
const bearerPattern = /^(\S+)(?: +([A-Za-z0-9\-._~+/]+=*))?$/;

/** Starts the certification stage: a strict token endpoint and partner API (the mock) behind a recorder. */
export async function startStage(options: StageOptions = {}): Promise<RunningStage> {
  const clock = options.clock ?? Date.now;
  const ttlSeconds = options.ttlSeconds ?? defaultTtlSeconds;
  const enabled = new Set(options.scenarios ?? scenarioNames);
  const grant = enabled.has('narrowed-grant') ? [...(options.scopes ?? defaultScopes)] : [...allScopes];
  const tokenDelayMs = options.tokenDelayMs ?? defaultTokenDelayMs;
  const apiDelayMs = options.apiDelayMs ?? defaultApiDelayMs;
  const maxExchanges = options.maxExchanges ?? defaultMaxExchanges;
  const listen = options.listen ?? '127.0.0.1';
  const client: StageClient = {
    clientId: `cert-${randomBytes(8).toString('hex')}`,
    clientSecret: randomBytes(24).toString('base64url'),
    partnerId: `partner-cert-${randomBytes(3).toString('hex')}`,
    authorizedScopes: grant,
  };
  const redactor = new Redactor();
  redactor.addSecret(client.clientSecret, '[client_secret]');
  redactor.addSecret(client.clientId, '[client_id]');
  const redact = (text: string) => redactor.redact(text);
  const cut = (text: string) =>
    text.length > keptText ? `${text.slice(0, keptText)}…[${text.length} chars]` : text;

  const startedAtEpoch = clock();
  const since = () => clock() - startedAtEpoch;
  const exchanges: RecordedExchange[] = [];
  let dropped = 0;
  let seq = 0;
  const tokens: IssuedToken[] = [];
  const tokenRefs = new Map<string, IssuedToken>();
  const tokensByRef = new Map<string, IssuedToken>();
  const plans = scenarioPlans(ttlSeconds, grant);
  const scenarios: ScenarioRecord[] = scenarioNames.map((name) => ({
    name,
    enabled: enabled.has(name),
    plan: plans[name],
  }));
  const scenario = (name: ScenarioName) => scenarios.find((item) => item.name === name)!;
  let eligibleCalls = 0;

  const authFront = createServer();
  const apiFront = createServer();
  const authPort = await listenOn(authFront, listen, options.authPort ?? 0, 'the token endpoint');
  let apiPort: number;
  try {
    apiPort = await listenOn(apiFront, listen, options.port ?? 0, 'the partner API');
  } catch (error) {
    authFront.close();
    throw error;
  }
  const publicHost =
    options.publicUrl ?? `http://${hostOf(listen === '0.0.0.0' || listen === '::' ? '127.0.0.1' : listen)}`;
  const authUrl = `${publicHost}:${authPort}`;
  const baseUrl = `${publicHost}:${apiPort}`;
  let mock: RunningMock;
  try {
    mock = await startMock({
      tokenTtlSeconds: ttlSeconds,
      clients: [client],
      publicUrls: { authUrl, baseUrl },
      clock,
    });
  } catch (error) {
    authFront.close();
    apiFront.close();
    throw error;
  }
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const tokenUrl = `${authUrl}/oauth/token`;
  const audience = mock.audience;

  function leaksOf(
    server: 'auth' | 'api',
    target: string,
    headers: IncomingMessage['headers'],
    body: string,
  ): Leak[] {
    const leaks = new Set<Leak>();
    const decodedTarget = safeDecode(target);
    const inText = (value: string, text: string) => value.length > 0 && text.includes(value);
    const secret = client.clientSecret;
    if (inText(secret, target) || inText(secret, decodedTarget)) leaks.add('secret-in-url');
    if (inText(client.clientId, target) || inText(client.clientId, decodedTarget))
      leaks.add('client-id-in-url');
    // Issued tokens are JWTs: anything JWT-shaped in a URL is a token there, issued or not.
    if (/eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]+/.test(decodedTarget)) leaks.add('token-in-url');
    if (server === 'api') {
      for (const [name, value] of Object.entries(headers)) {
        const text = Array.isArray(value) ? value.join(', ') : (value ?? '');
        if (inText(secret, text) || inText(secret, safeDecode(text))) leaks.add('secret-in-api-header');
        if (name === 'authorization' && basicCredentials(text)?.secret === secret)
          leaks.add('secret-in-api-header');
      }
      if (inText(secret, body) || inText(secret, safeDecode(body))) leaks.add('secret-in-api-body');
      // Look up each JWT-shaped run of the body (not every token ever issued: a token per call makes thousands).
      for (const candidate of body.match(jwtCandidates) ?? [])
        if (tokenRefs.has(candidate)) leaks.add('token-in-body');
    }
    return [...leaks];
  }

  function tokenFormOf(body: string, headers: IncomingMessage['headers']): TokenForm {
    const params = new URLSearchParams(body);
    const counts = new Map<string, number>();
    for (const key of params.keys()) counts.set(key, (counts.get(key) ?? 0) + 1);
    const basic = basicCredentials(headers.authorization);
    const inBody = params.has('client_id') || params.has('client_secret');
    const id = basic?.id ?? params.get('client_id') ?? undefined;
    const secret = basic?.secret ?? params.get('client_secret') ?? undefined;
    return {
      ...(params.has('grant_type') && { grantType: params.get('grant_type')! }),
      ...(params.has('scope') && { scope: params.get('scope')! }),
      ...(params.has('audience') && { audience: params.get('audience')! }),
      resource: params.getAll('resource'),
      clientAuth: basic && inBody ? 'both' : basic ? 'basic' : inBody ? 'body' : 'none',
      clientIdMatches: id === client.clientId,
      secretMatches: secret === client.clientSecret,
      repeated: [...counts].filter(([, count]) => count > 1).map(([key]) => key),
    };
  }

  function bearerOf(header: string | undefined): RecordedExchange['bearer'] {
    if (header === undefined) return undefined;
    const match = bearerPattern.exec(header);
    const scheme = (match?.[1] ?? header.split(/\s/)[0] ?? '').slice(0, 20);
    const token = match?.[2];
    const wellFormed = scheme.toLowerCase() === 'bearer' && token !== undefined;
    const issued = token === undefined ? undefined : tokenRefs.get(token);
    return {
      scheme: redact(scheme),
      wellFormed,
      ...(issued && { token: issued.ref }),
      ...(wellFormed && !issued && { unknownToken: true }),
    };
  }

  function record(exchange: RecordedExchange): void {
    if (exchanges.length < maxExchanges) exchanges.push(exchange);
    else dropped += 1;
  }

  function keptHeaders(headers: IncomingMessage['headers']): Record<string, string> {
    const kept: Record<string, string> = {};
    for (const name of ['authorization', 'content-type', 'accept', 'idempotency-key']) {
      const value = headers[name];
      if (typeof value === 'string') kept[name] = cut(redact(value));
    }
    return kept;
  }

  function send(
    res: ServerResponse,
    status: number,
    headers: Record<string, string>,
    body: string,
  ): Promise<void> {
    return new Promise((resolve) => {
      res.writeHead(status, { ...headers, 'content-length': String(Buffer.byteLength(body)) });
      res.end(body, () => resolve());
      res.once('close', () => resolve());
    });
  }

  function forward(
    req: IncomingMessage,
    origin: string,
    body: Buffer,
  ): Promise<{ status: number; headers: Record<string, string>; body: string }> {
    const url = new URL(req.url ?? '/', origin);
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers))
      if (
        value !== undefined &&
        !['connection', 'keep-alive', 'transfer-encoding', 'host', 'content-length'].includes(name)
      )
        headers[name] = value;
    headers['content-length'] = String(body.length);
    return new Promise((resolve, reject) => {
      const outgoing = httpRequest(
        { host: url.hostname, port: url.port, path: req.url ?? '/', method: req.method, headers, agent },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            const kept: Record<string, string> = {};
            for (const [name, value] of Object.entries(response.headers))
              if (
                value !== undefined &&
                !['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'date'].includes(name)
              )
                kept[name] = Array.isArray(value) ? value.join(', ') : value;
            resolve({
              status: response.statusCode ?? 502,
              headers: kept,
              body: Buffer.concat(chunks).toString('utf8'),
            });
          });
          response.on('error', reject);
        },
      );
      outgoing.on('error', reject);
      outgoing.end(body);
    });
  }

  /**
   * Hands an API call to the mock in process (no second HTTP hop: the mock answers on `res`), replaying
   * the body the stage already read, and keeps what the answer was for the record.
   */
  function dispatch(
    req: IncomingMessage,
    res: ServerResponse,
    body: Buffer,
  ): Promise<{ status: number; headers: Record<string, string>; body: string }> {
    const replay = Object.assign(Readable.from(body.length > 0 ? [body] : []), {
      method: req.method,
      url: req.url,
      headers: req.headers,
      rawHeaders: req.rawHeaders,
      httpVersion: req.httpVersion,
      socket: req.socket,
    }) as unknown as IncomingMessage;
    const kept: Buffer[] = [];
    let keptBytes = 0;
    const keep = (chunk: unknown) => {
      if (keptBytes >= keptText * 4 || chunk === undefined || chunk === null || typeof chunk === 'function')
        return;
      const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
      kept.push(buffer);
      keptBytes += buffer.length;
    };
    let headArgument: Record<string, unknown> = {};
    const writeHead = res.writeHead.bind(res);
    const write = res.write.bind(res);
    const end = res.end.bind(res);
    res.writeHead = ((status: number, ...rest: unknown[]) => {
      const headers = rest.find((item) => typeof item === 'object' && item !== null);
      if (headers) headArgument = headers as Record<string, unknown>;
      return (writeHead as (...args: unknown[]) => ServerResponse)(status, ...rest);
    }) as typeof res.writeHead;
    res.write = ((chunk: unknown, ...rest: unknown[]) => {
      keep(chunk);
      return (write as (...args: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof res.write;
    res.end = ((chunk?: unknown, ...rest: unknown[]) => {
      keep(chunk);
      return (end as (...args: unknown[]) => ServerResponse)(chunk, ...rest);
    }) as typeof res.end;
    return new Promise((resolve) => {
      const done = () => {
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries({ ...res.getHeaders(), ...headArgument }))
          if (value !== undefined)
            headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
        resolve({ status: res.statusCode, headers, body: Buffer.concat(kept).toString('utf8') });
      };
      res.once('finish', done);
      res.once('close', done);
      mock.handle('api', replay, res);
    });
  }

  const json = (value: unknown) => JSON.stringify(value);
  const challenge = (error: string, description: string) =>
    `Bearer realm="partner-api", error="${error}", error_description="${description}"`;

  /** The scenario step to play on an API call, if any (the call would otherwise have reached the API). */
  function injectionFor(
    method: string,
    path: string,
    bearer: RecordedExchange['bearer'],
    now: number,
  ): RecordedExchange['injected'] {
    const issued = bearer?.token === undefined ? undefined : tokensByRef.get(bearer.token);
    if (!issued || !bearer?.wellFormed) return undefined;
    if (issued.revokedAt !== undefined) return 'revoked';
    if (now >= issued.expAt) return undefined;
    const match = matchPath(path);
    const operationId = match?.methods[method];
    if (!operationId || operations[operationId].server !== 'api') return undefined;
    if (match.params.partner_id !== issued.partnerId) return undefined;
    if (!issued.scope.includes(operations[operationId].scope)) return undefined;
    eligibleCalls += 1;
    const revocation = scenario('revocation');
    if (revocation.enabled && revocation.firedAt === undefined && eligibleCalls >= revocationCall) {
      issued.revokedAt = now;
      return 'revoked';
    }
    const throttle = scenario('throttle');
    if (throttle.enabled && throttle.firedAt === undefined && eligibleCalls >= throttleCall)
      return 'throttled';
    const unavailable = scenario('unavailable');
    if (unavailable.enabled && unavailable.firedAt === undefined && method === 'POST') return 'unavailable';
    return undefined;
  }

  async function handle(server: 'auth' | 'api', req: IncomingMessage, res: ServerResponse): Promise<void> {
    const number = ++seq;
    const at = since();
    const target = req.url ?? '/';
    const method = req.method ?? '';
    const body = await readBody(req);
    const base: Omit<
      RecordedExchange,
      'status' | 'responseHeaders' | 'responseBody' | 'end' | 'leaks' | 'body'
    > = {
      seq: number,
      server,
      at,
      method,
      target: cut(redact(target)),
      requestHeaders: keptHeaders(req.headers),
    };
    if (body === 'too-large') {
      const status = server === 'api' ? 413 : 400;
      const answer = json({ error: 'invalid_request', error_description: 'the request body is over 1 MiB' });
      await send(res, status, { 'content-type': 'application/json', connection: 'close' }, answer);
      record({
        ...base,
        end: since(),
        body: { bytes: maxBodyBytes + 1, kind: 'other' },
        leaks: leaksOf(server, target, req.headers, ''),
        status,
        responseHeaders: { 'content-type': 'application/json' },
        responseBody: answer,
        error: 'invalid_request',
      });
      return;
    }
    const text = body.toString('utf8');
    const kind = bodyKindOf(body, req.headers['content-type']);
    const exchange: RecordedExchange = {
      ...base,
      end: 0,
      body: {
        bytes: body.length,
        ...(body.length > 0 && { sha256: createHash('sha256').update(body).digest('hex') }),
        kind,
        ...(body.length > 0 && { text: cut(redact(text.slice(0, keptText * 4))) }),
      },
      leaks: leaksOf(server, target, req.headers, text),
      status: 0,
      responseHeaders: {},
      responseBody: '',
    };
    const path = target.split('?')[0]!;
    let answer: { status: number; headers: Record<string, string>; body: string };
    if (server === 'auth') {
      if (path === '/oauth/token' && method === 'POST') {
        exchange.form = tokenFormOf(text, req.headers);
        // The narrowed grant is exercised the first time the journey asks for more than it is granted.
        const asked = (exchange.form.scope ?? '').split(' ').filter(Boolean);
        const narrowed = scenario('narrowed-grant');
        if (narrowed.enabled && narrowed.firedAt === undefined && asked.some((item) => !grant.includes(item)))
          Object.assign(narrowed, { firedAt: at, seq: number });
      }
      answer = await forward(req, mock.authUrl, body);
      if (path === '/oauth/token' && answer.status === 200) {
        const issued = register(answer.body, exchange.seq);
        if (issued) exchange.issued = issued.ref;
      }
      if (tokenDelayMs > 0 && path === '/oauth/token') await new Promise((r) => setTimeout(r, tokenDelayMs));
    } else {
      if (apiDelayMs > 0) await new Promise((r) => setTimeout(r, apiDelayMs));
      const bearer = bearerOf(req.headers.authorization);
      if (bearer) exchange.bearer = bearer;
      const injected = injectionFor(method, path, bearer, since());
      if (injected) {
        exchange.injected = injected;
        if (injected === 'revoked') {
          const record = scenario('revocation');
          if (record.firedAt === undefined) Object.assign(record, { firedAt: at, seq: number });
          const description = 'the access token was revoked';
          answer = {
            status: 401,
            headers: {
              'content-type': 'application/json',
              'www-authenticate': challenge('invalid_token', description),
            },
            body: json({ error: 'invalid_token', error_description: description }),
          };
        } else if (injected === 'throttled') {
          Object.assign(scenario('throttle'), { firedAt: at, seq: number });
          answer = {
            status: 429,
            headers: { 'content-type': 'application/json', 'retry-after': String(throttleRetryAfterSeconds) },
            body: json({
              error: 'rate_limited',
              error_description: 'too many requests; retry after the time given',
            }),
          };
        } else {
          Object.assign(scenario('unavailable'), { firedAt: at, seq: number });
          answer = {
            status: 503,
            headers: {
              'content-type': 'application/json',
              'retry-after': String(unavailableRetryAfterSeconds),
            },
            body: json({
              error: 'unavailable',
              error_description: 'the service is unavailable; nothing was created',
            }),
          };
        }
      } else {
        answer = await dispatch(req, res, body);
        const narrowed = scenario('narrowed-grant');
        if (
          narrowed.enabled &&
          narrowed.firedAt === undefined &&
          answer.status === 403 &&
          /insufficient_scope/.test(answer.headers['www-authenticate'] ?? '')
        )
          Object.assign(narrowed, { firedAt: at, seq: number });
      }
    }
    exchange.status = answer.status;
    for (const name of ['content-type', 'www-authenticate', 'retry-after', 'cache-control'])
      if (answer.headers[name] !== undefined)
        exchange.responseHeaders[name] = cut(redact(answer.headers[name]!));
    // Redact a window a little wider than what is kept (a secret across the cut is still caught).
    exchange.responseBody = cut(redact(answer.body.slice(0, keptText * 4)));
    if (answer.body.length > keptText * 4)
      exchange.responseBody = `${exchange.responseBody.slice(0, keptText)}…[${answer.body.length} chars]`;
    const error = /"error"\s*:\s*"([^"]{1,64})"/.exec(answer.body)?.[1];
    if (error) exchange.error = error;
    if (!res.headersSent) await send(res, answer.status, answer.headers, answer.body);
    exchange.end = since();
    record(exchange);
  }

  function register(body: string, issuedBy: number): IssuedToken | undefined {
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
      ref: `T${tokens.length + 1}`,
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
      partnerId: typeof claims.partnerId === 'string' ? claims.partnerId : client.partnerId,
      last6: token.slice(-6),
    };
    tokens.push(issued);
    tokenRefs.set(token, issued);
    tokensByRef.set(issued.ref, issued);
    return issued;
  }

  const serve = (server: 'auth' | 'api') => (req: IncomingMessage, res: ServerResponse) => {
    handle(server, req, res).catch((error: unknown) => {
      // The stage is the instrument: an error of its own is answered 502 and recorded, never hidden.
      const message = error instanceof Error ? error.message : String(error);
      record({
        seq: ++seq,
        server,
        at: since(),
        end: since(),
        method: req.method ?? '',
        target: cut(redact(req.url ?? '/')),
        requestHeaders: {},
        body: { bytes: 0, kind: 'none' },
        leaks: [],
        status: 502,
        responseHeaders: {},
        responseBody: cut(redact(`stage error: ${message}`)),
      });
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
      res.end(json({ error: 'stage_error', error_description: redact(message) }));
    });
  };
  authFront.on('request', serve('auth'));
  apiFront.on('request', serve('api'));
  for (const server of [authFront, apiFront]) server.keepAliveTimeout = 5000;

  let closing: Promise<void> | undefined;
  const closeFront = (server: Server) =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return {
    authUrl,
    baseUrl,
    tokenUrl,
    audience,
    client,
    env: () => ({
      PARTNER_AUTH_URL: authUrl,
      PARTNER_BASE_URL: baseUrl,
      PARTNER_TOKEN_URL: tokenUrl,
      PARTNER_AUDIENCE: audience,
      PARTNER_CLIENT_ID: client.clientId,
      PARTNER_CLIENT_SECRET: client.clientSecret,
      PARTNER_SCOPES: client.authorizedScopes.join(' '),
    }),
    exchangeCount: () => seq,
    session: (journey) => ({
      kind: 'partner-conformance-client-session',
      sessionVersion: 1,
      tool,
      startedAt: new Date(startedAtEpoch).toISOString(),
      durationMs: since(),
      stage: {
        authUrl,
        baseUrl,
        tokenUrl,
        audience,
        partnerId: client.partnerId,
        authorizedScopes: [...client.authorizedScopes],
        ttlSeconds,
        tokenDelayMs,
        apiDelayMs,
      },
      scenarios: scenarios.map((item) => ({ ...item })),
      journey: { ...journey, command: journey.command.map(redact) },
      exchanges: [...exchanges].sort((a, b) => a.seq - b.seq),
      tokens: tokens.map((item) => ({ ...item })),
      maxExchanges,
      dropped,
    }),
    close: () => {
      closing ??= Promise.all([closeFront(authFront), closeFront(apiFront), mock.close()]).then(() =>
        agent.destroy(),
      );
      return closing;
    },
  };
}
