import { createHash, randomBytes } from 'node:crypto';
import { Agent, createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type RunningMock, startMock } from '@partner-lending/mock';
import { scopes as allScopes } from '@partner-lending/spec';
import { Redactor } from '../common/redact.js';
import type { IntegrationRecord } from '../common/report.js';
import { tool } from '../version.js';
import type { ClientSession, JourneyRecord, RecordedExchange, ScenarioName } from './session.js';
import { maxSessionExchanges } from './session-schema.js';
import {
  ByteBudget,
  bodyKindOf,
  cut,
  defaultMaxHeldBytes,
  keptText,
  maxBodyBytes,
  readBody,
  requestReader,
} from './stage/request-reader.js';
import {
  defaultScopes,
  injectedAnswer,
  playScenarios,
  type StageAnswer,
  scenarioNames,
} from './stage/scenarios.js';
import { createTokenBook } from './stage/tokens.js';
import { dispatch, forward, hostOf, listenOn, send } from './stage/transport.js';

export {
  defaultScopes,
  maxRenewalWindowSeconds,
  phasesPlan,
  revocationCall,
  scenarioNames,
  scenarioPlans,
  throttleCall,
  throttleRetryAfterSeconds,
  unavailableRetryAfterSeconds,
} from './stage/scenarios.js';

/** Default lifetime of the short phase's tokens: its 15 s cross three lifetimes. */
export const defaultTtlSeconds = 5;
/** Short lifetimes last this many token lifetimes from the start; long tokens are issued after. */
export const shortPhaseLifetimes = 3;
/**
 * Default lifetime of the long phase's tokens: far longer than any mainstream renewal window (10 to
 * 300 s ahead of expiry), so that a client that caches has no reason to ask again during a journey.
 */
export const defaultLongTtlSeconds = 3600;

/** Default delay of every token answer, so that concurrent token requests overlap visibly. */
export const defaultTokenDelayMs = 100;
/** Default delay before an API call is answered, so that concurrent calls overlap visibly. */
export const defaultApiDelayMs = 20;
/** Default cap of the recorded exchanges; past it exchanges are counted, not kept. */
export const defaultMaxExchanges = 50_000;
export interface StageOptions {
  /** Lifetime of the tokens of the short phase (the first 3 lifetimes), in seconds. Default 5. */
  ttlSeconds?: number;
  /** Lifetime of the tokens issued after the short phase, in seconds (more than 300 + the journey). Default 3600. */
  longTtlSeconds?: number;
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
  /** Request-body bytes all requests being read may hold at once; past it a request gets 503. Default 64 MiB. */
  maxHeldBytes?: number;
  /** Epoch ms clock. Default Date.now. */
  clock?: () => number;
  /** The integration certified (`--partner`, `--integration-version`): kept in the session and the report. */
  integration?: IntegrationRecord;
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
  /** Token lifetime of the short phase, of the long phase (s), and how long the short phase lasts (ms). */
  readonly ttlSeconds: number;
  readonly longTtlSeconds: number;
  readonly shortPhaseMs: number;
  /** Environment variables for the journey (secret included). */
  env(): Record<string, string>;
  /** The session so far; `journey` completes it. */
  session(journey: JourneyRecord): ClientSession;
  /** Number of exchanges received so far. */
  exchangeCount(): number;
  close(): Promise<void>;
}

/** Starts the certification stage: a strict token endpoint and partner API (the mock) behind a recorder. */
export async function startStage(options: StageOptions = {}): Promise<RunningStage> {
  const clock = options.clock ?? Date.now;
  const ttlSeconds = options.ttlSeconds ?? defaultTtlSeconds;
  const longTtlSeconds = options.longTtlSeconds ?? defaultLongTtlSeconds;
  const shortPhaseMs = shortPhaseLifetimes * ttlSeconds * 1000;
  const enabled = new Set(options.scenarios ?? scenarioNames);
  const grant = enabled.has('narrowed-grant') ? [...(options.scopes ?? defaultScopes)] : [...allScopes];
  const tokenDelayMs = options.tokenDelayMs ?? defaultTokenDelayMs;
  const apiDelayMs = options.apiDelayMs ?? defaultApiDelayMs;
  // Never more than a session file may hold: the stage's own sessions always pass --judge.
  const maxExchanges = Math.min(options.maxExchanges ?? defaultMaxExchanges, maxSessionExchanges);
  const budget = new ByteBudget(options.maxHeldBytes ?? defaultMaxHeldBytes);
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
  redactor.addBasicCredentials(client.clientId, client.clientSecret, '[client_credentials]');

  const startedAtEpoch = clock();
  const since = () => clock() - startedAtEpoch;
  const exchanges: RecordedExchange[] = [];
  let dropped = 0;
  let seq = 0;
  const tokens = createTokenBook({ startedAtEpoch, since, ttlSeconds, partnerId: client.partnerId });
  /** The lifetime of a token asked for now: short in the short phase, long after. */
  const ttlNow = () => (since() < shortPhaseMs ? ttlSeconds : longTtlSeconds);
  const scenarios = playScenarios(enabled, grant);
  const { redact, leaksOf, tokenFormOf, bearerOf, keptHeaders, keptValue } = requestReader(
    client,
    redactor,
    tokens,
  );

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
  const json = (value: unknown) => JSON.stringify(value);

  function record(exchange: RecordedExchange): void {
    if (exchanges.length < maxExchanges) exchanges.push(exchange);
    else dropped += 1;
  }

  async function handle(server: 'auth' | 'api', req: IncomingMessage, res: ServerResponse): Promise<void> {
    const number = ++seq;
    const at = since();
    const target = req.url ?? '/';
    const method = req.method ?? '';
    const read = await readBody(req, budget);
    const base: Omit<
      RecordedExchange,
      'status' | 'responseHeaders' | 'responseBody' | 'end' | 'leaks' | 'body'
    > = {
      seq: number,
      server,
      at,
      method,
      target: cut(keptValue(target)),
      requestHeaders: keptHeaders(req.headers),
    };
    if (read === 'too-large' || read === 'over-budget') {
      // Over 1 MiB: 413 from the API (400 from the token endpoint, RFC 6749 §5.2); the stage's budget
      // of bodies held at once spent (many large bodies at once): 503, try again.
      const status = read === 'over-budget' ? 503 : server === 'api' ? 413 : 400;
      const answer = json(
        read === 'over-budget'
          ? {
              error: 'temporarily_unavailable',
              error_description: 'the stage holds too many request bodies at once; retry',
            }
          : { error: 'invalid_request', error_description: 'the request body is over 1 MiB' },
      );
      await send(res, status, { 'content-type': 'application/json', connection: 'close' }, answer);
      record({
        ...base,
        end: since(),
        body: { bytes: read === 'too-large' ? maxBodyBytes + 1 : 0, kind: 'other' },
        leaks: leaksOf(server, target, req.headers, ''),
        status,
        responseHeaders: { 'content-type': 'application/json' },
        responseBody: answer,
        error: read === 'over-budget' ? 'temporarily_unavailable' : 'invalid_request',
      });
      return;
    }
    try {
      await respond(server, req, res, read.body, number, at, base);
    } finally {
      read.release();
    }
  }

  async function respond(
    server: 'auth' | 'api',
    req: IncomingMessage,
    res: ServerResponse,
    body: Buffer,
    number: number,
    at: number,
    base: Omit<RecordedExchange, 'status' | 'responseHeaders' | 'responseBody' | 'end' | 'leaks' | 'body'>,
  ): Promise<void> {
    const target = req.url ?? '/';
    const method = req.method ?? '';
    const text = body.toString('utf8');
    const kind = bodyKindOf(body, req.headers['content-type']);
    const exchange: RecordedExchange = {
      ...base,
      end: 0,
      body: {
        bytes: body.length,
        ...(body.length > 0 && { sha256: createHash('sha256').update(body).digest('hex') }),
        kind,
        ...(body.length > 0 && { text: cut(keptValue(text.slice(0, keptText * 4))) }),
      },
      leaks: leaksOf(server, target, req.headers, text),
      status: 0,
      responseHeaders: {},
      responseBody: '',
    };
    const path = target.split('?')[0]!;
    let answer: StageAnswer;
    if (server === 'auth') {
      if (path === '/oauth/token' && method === 'POST') {
        exchange.form = tokenFormOf(text, req.headers);
        // The narrowed grant is exercised the first time the journey asks for more than it is granted.
        scenarios.tokenRequested((exchange.form.scope ?? '').split(' ').filter(Boolean), at, number);
      }
      if (path === '/oauth/token') mock.setTokenTtl(ttlNow());
      answer = await forward(req, mock.authUrl, body, agent);
      if (path === '/oauth/token' && answer.status === 200) {
        // A token issued past the recording cap is known (its calls are recognised) but not listed.
        const issued = tokens.register(answer.body, exchange.seq, exchanges.length < maxExchanges);
        if (issued) exchange.issued = issued.ref;
      }
      if (tokenDelayMs > 0 && path === '/oauth/token') await new Promise((r) => setTimeout(r, tokenDelayMs));
    } else {
      if (apiDelayMs > 0) await new Promise((r) => setTimeout(r, apiDelayMs));
      const bearer = bearerOf(req.headers.authorization);
      if (bearer) exchange.bearer = bearer;
      const issued = bearer?.wellFormed && bearer.token ? tokens.byRef(bearer.token) : undefined;
      const injected = scenarios.injectionFor(method, path, issued, since());
      if (injected) {
        exchange.injected = injected;
        scenarios.injected(injected, at, number);
        answer = injectedAnswer(injected);
      } else {
        answer = await dispatch(req, res, body, mock);
        scenarios.apiAnswered(answer.status, answer.headers['www-authenticate'], at, number);
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
        target: cut(keptValue(req.url ?? '/')),
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
    ttlSeconds,
    longTtlSeconds,
    shortPhaseMs,
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
      sessionVersion: 2,
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
        longTtlSeconds,
        shortPhaseMs,
        tokenDelayMs,
        apiDelayMs,
      },
      scenarios: scenarios.records.map((item) => ({ ...item })),
      journey: {
        ...journey,
        command: journey.command.slice(0, 256).map((arg) => redact(arg).slice(0, 4000)),
        ...(journey.survivors && { survivors: journey.survivors.map(redact) }),
      },
      exchanges: [...exchanges].sort((a, b) => a.seq - b.seq),
      tokens: tokens.issued.map((item) => ({ ...item })),
      maxExchanges,
      dropped,
      ...(options.integration && { integration: { ...options.integration } }),
    }),
    close: () => {
      closing ??= Promise.all([closeFront(authFront), closeFront(apiFront), mock.close()]).then(() =>
        agent.destroy(),
      );
      return closing;
    },
  };
}
