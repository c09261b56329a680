import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { inspect } from 'node:util';
import type { VerifiedToken } from './access-token.js';
import { type ApiServerContext, type CachedPage, handleApiRequest } from './api-server.js';
import { type AuthServerContext, handleAuthRequest, jwksPath, tokenPath } from './auth-server.js';
import { BoundedCache } from './bounded-cache.js';
import { MockError } from './errors.js';
import {
  type EvidenceOptions,
  EvidenceReporter,
  type EvidenceStatus,
  resolveEvidenceOptions,
} from './evidence-reporter.js';
import { type FaultName, parseFaults } from './faults.js';
import { KeySet, type RsaKeyPair } from './jwks.js';
import { defaultStoreLimits, PartnerStore, type StoreLimits } from './loans.js';
import { demoClients, type MockClient, parseClients, protectClient } from './mock-client.js';
import { closeServer, createMockServer, listen, type ServerOptions } from './mock-server.js';
import { type RegisterOptions, type RegisterStatus, registerReader } from './production-register.js';
import { type MockProfile, mockProfiles, profileRules, tokenShapeOf } from './profile.js';
import { type LoggedRequest, RequestLog } from './request-log.js';
import { checkOperatorKey, TokenRevocations } from './token-revocation.js';

export interface MockOptions {
  /**
   * Token shape: 'deployed' (as the deployed service) or 'rfc9068'; or 'production': the deployed
   * shape, and tokens only for partners the `register` lists as active. Default 'deployed'.
   */
  profile?: MockProfile;
  /**
   * The certification service's register (required by the 'production' profile, refused by the
   * others): `{ url, key, jwksUrl?, timeoutMs? }`. The clients' `partnerId` is the partner id the
   * register lists. Default: none.
   */
  register?: RegisterOptions;
  /**
   * The production profile's evidence report to the certification service (refused by the other
   * profiles): `{ url, key, fingerprintKey?, spoolFile?, bufferRecords?, … }`. Default: none.
   */
  evidence?: EvidenceOptions;
  /**
   * Enables the operator control `POST /operator/revoke-tokens` on the auth server, with this key as
   * the bearer token (one word of at least 16 characters). Default: none, the route does not exist (404).
   */
  operatorKey?: string;
  /** JWT lifetime in seconds. Default 43200 (12 h, as the deployed service). */
  tokenTtlSeconds?: number;
  /** The client registry. Default: three demo clients (see README). */
  clients?: MockClient[];
  /**
   * Caches of the API: signature checks by exact token string (claims such as exp and nbf are still
   * checked on every request; not used under faults) and serialised loans pages. Default true;
   * false measures or debugs the uncached path.
   */
  caches?: boolean;
  /** Named faults, each breaking one rule. Default []. */
  faults?: FaultName[];
  /** Epoch ms. Default Date.now. Used for iat/exp and for validating exp/nbf. */
  clock?: () => number;
  /** exp/nbf leeway of the API in seconds. Default 0. */
  leewaySeconds?: number;
  /** What an empty requested ∩ authorised scope gives. Default 'invalid_scope' (400). */
  emptyIntersection?: 'invalid_scope' | 'empty-token';
  /** Demo loans per partner. Default 25. */
  loansPerPartner?: number;
  /** Objects kept from creates over all partners; past it the oldest are dropped. Default 10000. */
  maxStored?: number;
  /** Objects kept from creates per partner; past it the partner's oldest are dropped. Default 1000. */
  maxStoredPerPartner?: number;
  /** UTF-8 bytes of the JSON of the objects kept, over all partners. Default 67108864 (64 MiB). */
  maxStoredBytes?: number;
  /** Interface both servers bind. Default '127.0.0.1'. */
  host?: string;
  /** Port of the auth server. Default 0 (random). */
  authPort?: number;
  /** Port of the API. Default 0 (random). */
  apiPort?: number;
  /** Longest time a request may take to arrive (headers and body), in ms; 408 after it. Default 30000. */
  requestTimeoutMs?: number;
  /** Longest time the request headers may take to arrive, in ms (at most requestTimeoutMs). Default 10000. */
  headersTimeoutMs?: number;
  /**
   * Called with any error a handler let escape (a bug in the mock; the request got a 500).
   * Default: one line with the stack on stderr. `RunningMock.internalErrorCount()` counts them.
   */
  onInternalError?: (error: unknown) => void;
  /**
   * The first RS256 signing key pair. Default: a fresh 2048-bit pair per start (the slowest part of
   * start-up); pass one pair to many mocks to start them faster. Rotation always generates new keys.
   */
  signingKey?: RsaKeyPair;
  /**
   * The URLs clients use when the mock is reached through a proxy or a port mapping: origins, or
   * origins with a base path when the proxy routes by path. The issuer and the audience are derived
   * from them instead of the listening addresses. Default: the listening addresses.
   */
  publicUrls?: { authUrl: string; baseUrl: string };
  /**
   * Other APIs the auth server issues tokens for, as a real one serving several APIs does: a token
   * request naming one of them gets a token with that audience, which this mock's API refuses (401).
   * Default [] (any other audience is refused 403 access_denied).
   */
  otherAudiences?: string[];
}

export interface RunningMock {
  /** Origin of the auth server, e.g. http://127.0.0.1:41234. */
  readonly authUrl: string;
  /** Origin of the API, e.g. http://127.0.0.1:41235; also the audience (unless `publicUrls` is given). */
  readonly baseUrl: string;
  /** The audience tokens are issued for and checked against: `baseUrl`, or `publicUrls.baseUrl`. */
  readonly audience: string;
  /** deployed: authUrl + '/'; rfc9068: authUrl (of `publicUrls` when given). */
  readonly issuer: string;
  readonly jwksUrl: string;
  readonly tokenUrl: string;
  /** The registered clients (secrets included; kept out of JSON.stringify and util.inspect). */
  readonly clients: MockClient[];
  readonly profile: MockProfile;
  /** The production profile's register: the copy in use and the last read. Undefined for other profiles. */
  registerStatus(): RegisterStatus | undefined;
  /** The evidence report: what is held, sent and dropped. Undefined without `evidence`. */
  evidenceStatus(): EvidenceStatus | undefined;
  readonly faults: readonly FaultName[];
  /** Requests received by the token endpoint (POST /oauth/token), successful or not. */
  tokenRequestCount(): number;
  /** How many created objects are kept, and the size of their JSON in bytes. */
  storedUsage(): { readonly items: number; readonly bytes: number };
  /** Requests answered 500 because of an error inside the mock (0 unless the mock has a bug). */
  internalErrorCount(): number;
  /** The newest 1000 requests of both servers, secrets and tokens redacted. */
  requestLog(): readonly LoggedRequest[];
  /**
   * Hands a request that another HTTP server received (a recorder or proxy in front of the mock, in
   * the same process) to the auth server or the API, which answers on `res` as if it had arrived
   * there: no second HTTP hop. `req` needs `method`, `url` and `headers`, and its body as a stream.
   */
  handle(server: 'auth' | 'api', req: IncomingMessage, res: ServerResponse): void;
  /** Adds a new signing key; the previous one stays published until the next rotation. */
  rotateKeys(options?: { retirePrevious?: boolean }): Promise<void>;
  /**
   * Sets the lifetime of the tokens issued from now on, in seconds (1 to 10 years); tokens already
   * issued keep theirs. The certification stage issues short tokens first, then long ones.
   */
  setTokenTtl(seconds: number): void;
  close(): Promise<void>;
}

/** Entries of each API cache (verified tokens, loans pages). */
const cacheEntries = 1000;

const fail = (message: string): never => {
  throw new MockError('ERR_MOCK_OPTIONS', message);
};

function integer(
  name: string,
  value: number | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < min || value > max)
    fail(`startMock: ${name} must be an integer from ${min} to ${max}, got ${String(value)}.`);
  return value;
}

function reportInternalError(error: unknown): void {
  const text = error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
  process.stderr.write(`partner-mock: internal error (the request was answered 500): ${text}\n`);
}

/**
 * An http(s) origin, or an origin and a base path (a proxy that routes by path, as a hosted stage
 * does), with no query, fragment or credentials, for `publicUrls`. A trailing slash is dropped.
 */
function publicOrigin(name: string, value: unknown): string {
  let url: URL | undefined;
  try {
    url = typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (
    !url ||
    !/^https?:$/.test(url.protocol) ||
    url.username !== '' ||
    url.password !== '' ||
    url.search !== '' ||
    url.hash !== '' ||
    (typeof value === 'string' && /[?#]/.test(value))
  )
    return fail(
      `startMock: publicUrls.${name} must be an http(s) URL such as http://127.0.0.1:8080 or https://proxy.example/run-1/api (no query, fragment or credentials).`,
    );
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

const origin = (host: string, port: number) => `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

/** Starts the auth server and the API on two ports of 127.0.0.1 (two origins, as in production). */
export async function startMock(options: MockOptions = {}): Promise<RunningMock> {
  const profile = options.profile ?? 'deployed';
  if (!mockProfiles.includes(profile))
    fail(`startMock: profile must be one of ${mockProfiles.join(', ')}, got ${String(profile)}.`);
  if (profile === 'production' && (options.register === undefined || options.clients === undefined))
    fail(
      "startMock: the 'production' profile needs register ({ url, key }: the certification service's register and a register reader key) and clients (each partnerId being the partner id the register lists).",
    );
  if (profile !== 'production' && options.register !== undefined)
    fail("startMock: register is for the 'production' profile only; add profile: 'production'.");
  if (profile !== 'production' && options.evidence !== undefined)
    fail("startMock: evidence is for the 'production' profile only; add profile: 'production'.");
  if (options.evidence !== undefined) resolveEvidenceOptions(options.evidence);
  const operatorKey = options.operatorKey === undefined ? undefined : checkOperatorKey(options.operatorKey);
  let tokenTtlSeconds = integer('tokenTtlSeconds', options.tokenTtlSeconds, 43_200, 1, 10 * 365 * 86_400);
  const loansPerPartner = integer('loansPerPartner', options.loansPerPartner, 25, 0, 100_000);
  const storeLimits: StoreLimits = {
    maxStored: integer('maxStored', options.maxStored, defaultStoreLimits.maxStored, 0, 10_000_000),
    maxStoredPerPartner: integer(
      'maxStoredPerPartner',
      options.maxStoredPerPartner,
      defaultStoreLimits.maxStoredPerPartner,
      0,
      10_000_000,
    ),
    maxStoredBytes: integer(
      'maxStoredBytes',
      options.maxStoredBytes,
      defaultStoreLimits.maxStoredBytes,
      0,
      Number.MAX_SAFE_INTEGER,
    ),
  };
  const authPort = integer('authPort', options.authPort, 0, 0, 65_535);
  const apiPort = integer('apiPort', options.apiPort, 0, 0, 65_535);
  const requestTimeoutMs = integer('requestTimeoutMs', options.requestTimeoutMs, 30_000, 1, 3_600_000);
  const headersTimeoutMs = integer('headersTimeoutMs', options.headersTimeoutMs, 10_000, 1, 3_600_000);
  const { onInternalError = reportInternalError } = options;
  if (typeof onInternalError !== 'function') fail('startMock: onInternalError must be a function.');
  const leewaySeconds = options.leewaySeconds ?? 0;
  if (!Number.isFinite(leewaySeconds) || leewaySeconds < 0)
    fail(`startMock: leewaySeconds must be a number ≥ 0, got ${String(leewaySeconds)}.`);
  const emptyIntersection = options.emptyIntersection ?? 'invalid_scope';
  if (emptyIntersection !== 'invalid_scope' && emptyIntersection !== 'empty-token')
    fail(
      `startMock: emptyIntersection must be 'invalid_scope' or 'empty-token', got ${String(emptyIntersection)}.`,
    );
  const caches = options.caches ?? true;
  if (typeof caches !== 'boolean') fail(`startMock: caches must be true or false, got ${String(caches)}.`);
  const clock = options.clock ?? Date.now;
  if (typeof clock !== 'function') fail('startMock: clock must be a function returning epoch milliseconds.');
  const host = options.host ?? '127.0.0.1';
  const publicUrls =
    options.publicUrls === undefined
      ? undefined
      : {
          authUrl: publicOrigin('authUrl', options.publicUrls.authUrl),
          baseUrl: publicOrigin('baseUrl', options.publicUrls.baseUrl),
        };
  const faultList = parseFaults(options.faults ?? []);
  const faults = new Set(faultList);
  const clients = (options.clients === undefined ? demoClients() : parseClients(options.clients)).map(
    protectClient,
  );

  const { signingKey } = options;
  if (
    signingKey !== undefined &&
    (signingKey.privateKey?.algorithm?.name !== 'RSASSA-PKCS1-v1_5' ||
      signingKey.publicKey?.type !== 'public')
  )
    fail("startMock: signingKey must be an RS256 key pair from jose's generateKeyPair('RS256').");
  const register = options.register === undefined ? undefined : registerReader(options.register, clock);
  const revocations = operatorKey === undefined ? undefined : new TokenRevocations(clock);
  const keys = await KeySet.create(signingKey);
  const log = new RequestLog();
  let tokenRequests = 0;
  let internalErrors = 0;
  const countInternalError = (error: unknown) => {
    internalErrors += 1;
    onInternalError(error);
  };
  const store = new PartnerStore(
    clients.map((client) => client.partnerId),
    loansPerPartner,
    clock(),
    storeLimits,
  );
  // Filled in once both ports are known; no request can arrive before the servers listen.
  const urls = { authUrl: '', baseUrl: '', issuer: '', audience: '' };
  const otherAudiences = options.otherAudiences ?? [];
  if (
    !Array.isArray(otherAudiences) ||
    otherAudiences.some((item) => typeof item !== 'string' || item === '')
  )
    fail('startMock: otherAudiences must be an array of audience strings (e.g. https://other-api.example).');
  const shape = tokenShapeOf(profile);
  const authContext: AuthServerContext = {
    profile: shape,
    register,
    otherAudiences: [...otherAudiences],
    get issuer() {
      return urls.issuer;
    },
    get audience() {
      return urls.audience;
    },
    get tokenTtlSeconds() {
      return tokenTtlSeconds;
    },
    clock,
    keys,
    faults,
    emptyIntersection,
    fixedJti: randomUUID(),
    clients,
    operator:
      operatorKey === undefined || revocations === undefined
        ? undefined
        : { key: operatorKey, revocations, partnerIds: new Set(clients.map((client) => client.partnerId)) },
    countTokenRequest: () => {
      tokenRequests += 1;
    },
  };
  const apiContext: ApiServerContext = {
    keys,
    get issuer() {
      return urls.issuer;
    },
    get audience() {
      return urls.audience;
    },
    profile: shape,
    clock,
    leewaySeconds,
    faults,
    store,
    revocations,
    ...(caches && {
      verified: new BoundedCache<string, VerifiedToken>(cacheEntries),
      pages: new BoundedCache<string, CachedPage>(cacheEntries),
    }),
  };
  // The spool is opened (and what it kept read) before anything is served.
  const evidence =
    options.evidence === undefined ? undefined : await EvidenceReporter.start(options.evidence);
  // The two servers differ only by name and handler.
  const server = (name: ServerOptions['name'], handler: ServerOptions['handler']) =>
    createMockServer({
      name,
      handler,
      log,
      clock,
      requestTimeoutMs,
      headersTimeoutMs,
      onInternalError: countInternalError,
      caches,
      onServed: evidence === undefined ? undefined : (served) => evidence?.record(served),
    });
  const authServer = server('auth', (req, res, exchange, target) =>
    handleAuthRequest(req, res, authContext, exchange, target),
  );
  const apiServer = server('api', (req, res, exchange, target) =>
    handleApiRequest(req, res, apiContext, exchange, target),
  );
  try {
    urls.authUrl = origin(host, await listen(authServer, host, authPort));
    urls.baseUrl = origin(host, await listen(apiServer, host, apiPort));
  } catch (cause) {
    await Promise.all([closeServer(authServer), closeServer(apiServer)]);
    await evidence?.close();
    throw new MockError(
      'ERR_MOCK_LISTEN',
      `startMock: could not listen on ${host} (auth port ${authPort}, API port ${apiPort}): ${(cause as Error).message}. Choose free ports or 0 for random ones.`,
      { cause },
    );
  }
  urls.issuer = profileRules[shape].issuer(publicUrls?.authUrl ?? urls.authUrl);
  // The first read, so that the first token request does not wait for it (a failure is only noted).
  await register?.refresh();
  urls.audience = publicUrls?.baseUrl ?? urls.baseUrl;

  let closing: Promise<void> | undefined;
  const running: RunningMock = {
    authUrl: urls.authUrl,
    baseUrl: urls.baseUrl,
    audience: urls.audience,
    issuer: urls.issuer,
    jwksUrl: `${urls.authUrl}${jwksPath}`,
    tokenUrl: `${urls.authUrl}${tokenPath}`,
    clients,
    profile,
    faults: Object.freeze([...faultList]),
    tokenRequestCount: () => tokenRequests,
    internalErrorCount: () => internalErrors,
    storedUsage: () => store.usage(),
    requestLog: () => log.entries(),
    registerStatus: () => register?.status(),
    evidenceStatus: () => evidence?.status(),
    rotateKeys: (rotateOptions) => keys.rotate(rotateOptions),
    setTokenTtl: (seconds) => {
      tokenTtlSeconds = integer('setTokenTtl', seconds, tokenTtlSeconds, 1, 10 * 365 * 86_400);
    },
    handle: (server, req, res) => {
      (server === 'auth' ? authServer : apiServer).emit('request', req, res);
    },
    close: () => {
      // Evidence last: every exchange answered is recorded before the report is flushed.
      closing ??= Promise.all([closeServer(authServer), closeServer(apiServer), register?.close()]).then(() =>
        evidence?.close(),
      );
      return closing;
    },
  };
  Object.defineProperty(running, inspect.custom, {
    value: () =>
      `RunningMock { authUrl: '${running.authUrl}', baseUrl: '${running.baseUrl}', profile: '${profile}' }`,
    enumerable: false,
  });
  return running;
}
