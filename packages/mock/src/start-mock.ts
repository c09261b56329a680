import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { inspect } from 'node:util';
import type { VerifiedToken } from './access-token.js';
import { type ApiServerContext, type CachedPage, handleApiRequest } from './api-server.js';
import { type AuthServerContext, handleAuthRequest, jwksPath, tokenPath } from './auth-server.js';
import { BoundedCache } from './bounded-cache.js';
import { MockError } from './errors.js';
import { EvidenceReporter, type EvidenceStatus } from './evidence-reporter.js';
import type { FaultName } from './faults.js';
import { KeySet } from './jwks.js';
import { PartnerStore } from './loans.js';
import type { MockClient } from './mock-client.js';
import { closeServer, createMockServer, listen, type ServerOptions } from './mock-server.js';
import { type RegisterStatus, registerReader } from './production-register.js';
import { type MockProfile, profileRules, tokenShapeOf } from './profile.js';
import { type LoggedRequest, RequestLog } from './request-log.js';
import { checkOtherAudiences, checkStartOptions, integer, type MockOptions } from './start-options.js';
import { TokenRevocations } from './token-revocation.js';

export type { MockOptions } from './start-options.js';

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

const origin = (host: string, port: number) => `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

type Checked = ReturnType<typeof checkStartOptions>;

/** The addresses, filled in once both ports are known; no request can arrive before the servers listen. */
interface Urls {
  authUrl: string;
  baseUrl: string;
  issuer: string;
  audience: string;
}

/** Starts the auth server and the API on two ports of 127.0.0.1 (two origins, as in production). */
export async function startMock(options: MockOptions = {}): Promise<RunningMock> {
  const checked = checkStartOptions(options);
  const { clients, clock, profile } = checked;
  let tokenTtlSeconds = checked.tokenTtlSeconds;
  const register = options.register === undefined ? undefined : registerReader(options.register, clock);
  const revocations = checked.operatorKey === undefined ? undefined : new TokenRevocations(clock);
  const keys = await KeySet.create(checked.signingKey);
  const log = new RequestLog();
  const counts = { tokenRequests: 0, internalErrors: 0 };
  const countInternalError = (error: unknown) => {
    counts.internalErrors += 1;
    checked.onInternalError(error);
  };
  const store = new PartnerStore(
    clients.map((client) => client.partnerId),
    checked.loansPerPartner,
    clock(),
    checked.storeLimits,
  );
  const urls: Urls = { authUrl: '', baseUrl: '', issuer: '', audience: '' };
  const otherAudiences = checkOtherAudiences(options.otherAudiences);
  const shape = tokenShapeOf(profile);
  const authContext = authServerContext(checked, {
    shape,
    register,
    otherAudiences,
    urls,
    tokenTtlSeconds: () => tokenTtlSeconds,
    keys,
    revocations,
    countTokenRequest: () => {
      counts.tokenRequests += 1;
    },
  });
  const apiContext = apiServerContext(checked, { shape, urls, keys, store, revocations });
  // The spool is opened (and what it kept read) before anything is served.
  const evidence =
    options.evidence === undefined ? undefined : await EvidenceReporter.start(options.evidence);
  const { authServer, apiServer } = mockServers(checked, {
    log,
    evidence,
    onInternalError: countInternalError,
    authContext,
    apiContext,
  });
  await listenBoth(checked, urls, authServer, apiServer, evidence);
  urls.issuer = profileRules[shape].issuer(checked.publicUrls?.authUrl ?? urls.authUrl);
  // The first read, so that the first token request does not wait for it (a failure is only noted).
  await register?.refresh();
  urls.audience = checked.publicUrls?.baseUrl ?? urls.baseUrl;

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
    faults: Object.freeze([...checked.faultList]),
    tokenRequestCount: () => counts.tokenRequests,
    internalErrorCount: () => counts.internalErrors,
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

/** The auth server and the API, not listening yet: the two differ only by name and handler. */
function mockServers(
  checked: Checked,
  parts: {
    log: RequestLog;
    evidence: EvidenceReporter | undefined;
    onInternalError: (error: unknown) => void;
    authContext: AuthServerContext;
    apiContext: ApiServerContext;
  },
) {
  const { log, evidence, authContext, apiContext } = parts;
  const { clock } = checked;
  const server = (name: ServerOptions['name'], handler: ServerOptions['handler']) =>
    createMockServer({
      name,
      handler,
      log,
      clock,
      requestTimeoutMs: checked.requestTimeoutMs,
      headersTimeoutMs: checked.headersTimeoutMs,
      onInternalError: parts.onInternalError,
      caches: checked.caches,
      onServed: evidence === undefined ? undefined : (served) => evidence?.record(served),
    });
  const authServer = server('auth', (req, res, exchange, target) =>
    handleAuthRequest(req, res, authContext, exchange, target),
  );
  const apiServer = server('api', (req, res, exchange, target) =>
    handleApiRequest(req, res, apiContext, exchange, target),
  );
  return { authServer, apiServer };
}

/** What the auth server reads: the issuer, audience and token lifetime as they are now. */
function authServerContext(
  checked: Checked,
  parts: {
    shape: AuthServerContext['profile'];
    register: AuthServerContext['register'];
    otherAudiences: string[];
    urls: Urls;
    tokenTtlSeconds: () => number;
    keys: KeySet;
    revocations: TokenRevocations | undefined;
    countTokenRequest: () => void;
  },
): AuthServerContext {
  const { urls, revocations } = parts;
  const { operatorKey, clients } = checked;
  return {
    profile: parts.shape,
    register: parts.register,
    otherAudiences: [...parts.otherAudiences],
    get issuer() {
      return urls.issuer;
    },
    get audience() {
      return urls.audience;
    },
    get tokenTtlSeconds() {
      return parts.tokenTtlSeconds();
    },
    clock: checked.clock,
    keys: parts.keys,
    faults: checked.faults,
    emptyIntersection: checked.emptyIntersection,
    fixedJti: randomUUID(),
    clients,
    operator:
      operatorKey === undefined || revocations === undefined
        ? undefined
        : { key: operatorKey, revocations, partnerIds: new Set(clients.map((client) => client.partnerId)) },
    countTokenRequest: parts.countTokenRequest,
  };
}

/** What the API reads, with its caches unless `caches` is false. */
function apiServerContext(
  checked: Checked,
  parts: {
    shape: ApiServerContext['profile'];
    urls: Urls;
    keys: KeySet;
    store: PartnerStore;
    revocations: TokenRevocations | undefined;
  },
): ApiServerContext {
  const { urls } = parts;
  return {
    keys: parts.keys,
    get issuer() {
      return urls.issuer;
    },
    get audience() {
      return urls.audience;
    },
    profile: parts.shape,
    clock: checked.clock,
    leewaySeconds: checked.leewaySeconds,
    faults: checked.faults,
    store: parts.store,
    revocations: parts.revocations,
    ...(checked.caches && {
      verified: new BoundedCache<string, VerifiedToken>(cacheEntries),
      pages: new BoundedCache<string, CachedPage>(cacheEntries),
    }),
  };
}

/** Both servers listening (their origins in `urls`), or both closed and a MockError ERR_MOCK_LISTEN. */
async function listenBoth(
  checked: Checked,
  urls: Urls,
  authServer: Server,
  apiServer: Server,
  evidence: EvidenceReporter | undefined,
): Promise<void> {
  const { host, authPort, apiPort } = checked;
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
}
