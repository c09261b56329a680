import { MockError } from './errors.js';
import { type EvidenceOptions, resolveEvidenceOptions } from './evidence-reporter.js';
import { type FaultName, parseFaults } from './faults.js';
import type { RsaKeyPair } from './jwks.js';
import { defaultStoreLimits, type StoreLimits } from './loans.js';
import { demoClients, type MockClient, parseClients, protectClient } from './mock-client.js';
import type { RegisterOptions } from './production-register.js';
import { type MockProfile, mockProfiles } from './profile.js';
import { checkOperatorKey } from './token-revocation.js';

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

const fail = (message: string): never => {
  throw new MockError('ERR_MOCK_OPTIONS', message);
};

export function integer(
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

/**
 * `startMock`'s options checked (a MockError ERR_MOCK_OPTIONS saying which and what it takes) and
 * their defaults filled in, in the order startMock has always checked them.
 */
export function checkStartOptions(options: MockOptions) {
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
  const tokenTtlSeconds = integer('tokenTtlSeconds', options.tokenTtlSeconds, 43_200, 1, 10 * 365 * 86_400);
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
  return {
    profile,
    operatorKey,
    tokenTtlSeconds,
    loansPerPartner,
    storeLimits,
    authPort,
    apiPort,
    requestTimeoutMs,
    headersTimeoutMs,
    onInternalError,
    leewaySeconds,
    emptyIntersection,
    caches,
    clock,
    host,
    publicUrls,
    faultList,
    faults,
    clients,
    signingKey,
  };
}

/** `otherAudiences` checked: audience strings, none empty. */
export function checkOtherAudiences(value: MockOptions['otherAudiences']): string[] {
  const otherAudiences = value ?? [];
  if (
    !Array.isArray(otherAudiences) ||
    otherAudiences.some((item) => typeof item !== 'string' || item === '')
  )
    fail('startMock: otherAudiences must be an array of audience strings (e.g. https://other-api.example).');
  return otherAudiences;
}
