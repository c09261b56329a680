// Production traffic of one partner as the gate and the gateway report it, simulated with a fake clock
// (no waiting): client profiles built from the documented defaults of real libraries, a fleet of
// processes each with its own cache, and the faults the gate plays now and then (429 and 503 with
// Retry-After, a revocation a day, clocks a few seconds apart). Deterministic for a seed.
import type { Exchange } from '../../src/evidence/exchange.js';

/** The production gate's token lifetime: expires_in 43199 for a 12-h JWT. */
export const expiresInSeconds = 43_199;
const lifetimeMs = expiresInSeconds * 1000;
const hourMs = 3_600_000;
const allScopes = ['read:loans', 'create:loan_draft', 'create:journal_update', 'create:repayment'];

/** How a library (and the app around it) caches and renews its token. */
export interface ClientProfile {
  name: string;
  /** Where the default comes from. */
  source: string;
  /** How long before the token's expiry (as the client reckons it) the next one is asked for. */
  renewAheadMs(lifetime: number, random: () => number): number;
  /** The library keeps expires_at in whole seconds, rounded down (int(time.time()) + expires_in). */
  wholeSeconds?: boolean;
  /** Processes, each with its own cache (default 1). */
  processes?: number;
  /** Token caches per process, one per scope set (default 1: one token for every scope). */
  scopeSets?: number;
  /** Each process restarts once a day, staggered (a rolling deploy): its cache starts empty. */
  restartsDaily?: boolean;
}

/** The documented defaults of the libraries partners use, each with its source. */
export const clientProfiles: readonly ClientProfile[] = [
  {
    name: '@partner-lending/auth (SDK)',
    // packages/auth README: refresh.softWindowMs 60 000, softWindowRatio 0.1 (a 12-h token ~72 min
    // early), jitterRatio 0.2, capped at 12 % of the lifetime; a background request, one per scope set.
    source: '@partner-lending/auth refresh defaults (softWindowMs, softWindowRatio, jitterRatio)',
    renewAheadMs: (lifetime, random) =>
      Math.min(Math.max(60_000, 0.1 * lifetime) * (1 + 0.2 * random()), 0.12 * lifetime),
    scopeSets: 2,
  },
  {
    name: 'openid-client / oauth4webapi',
    // Neither caches a client-credentials token (clientCredentialsGrant / processClientCredentialsResponse
    // return it); the app keeps it for the process and asks again once expires_in has passed: no leeway.
    source: 'openid-client 6 clientCredentialsGrant, oauth4webapi: no token cache; app renews at expires_in',
    renewAheadMs: () => 0,
  },
  {
    name: 'simple-oauth2',
    // AccessToken#expired(expirationWindowSeconds = 0): the app renews when expired() turns true.
    source: 'simple-oauth2 AccessToken.expired(expirationWindowSeconds = 0)',
    renewAheadMs: () => 0,
  },
  {
    name: 'Authlib (Python)',
    // authlib/oauth2/rfc6749/wrappers.py: OAuth2Token.is_expired(leeway=60); expires_at = int(time.time()) + expires_in.
    source: 'Authlib OAuth2Token.is_expired(leeway=60), expires_at in whole seconds',
    renewAheadMs: () => 60_000,
    wholeSeconds: true,
  },
  {
    name: 'golang.org/x/oauth2 clientcredentials',
    // token.go: defaultExpiryDelta = 10 * time.Second; clientcredentials.Config.TokenSource is a ReuseTokenSource.
    source: 'golang.org/x/oauth2 defaultExpiryDelta 10 s, ReuseTokenSource',
    renewAheadMs: () => 10_000,
  },
  {
    name: 'Spring Security',
    // ClientCredentialsOAuth2AuthorizedClientProvider: clockSkew = Duration.ofSeconds(60) (renews 60 s ahead).
    source: 'Spring Security ClientCredentialsOAuth2AuthorizedClientProvider clockSkew 60 s',
    renewAheadMs: () => 60_000,
  },
  {
    name: 'Ruby oauth2',
    // OAuth2::AccessToken#expired?: expires_at <= Time.now.to_i (expires_latency unset by default).
    source: 'Ruby oauth2 AccessToken#expired? (expires_latency nil), whole seconds',
    renewAheadMs: () => 0,
    wholeSeconds: true,
  },
  {
    name: 'fleet: 6 processes (x/oauth2), daily rolling restart',
    source: 'golang.org/x/oauth2 defaults, one cache per process',
    renewAheadMs: () => 10_000,
    processes: 6,
    restartsDaily: true,
  },
];

/** A broken client, for the controls. */
export interface ClientFault {
  /** A token request before every call. */
  tokenPerCall?: boolean;
  /** A token refused 401 invalid_token is kept and sent again. */
  resendRevoked?: boolean;
  /** Calls go on through a 429/503's Retry-After. */
  ignoreRetryAfter?: boolean;
}

export interface TrafficOptions {
  profile: ClientProfile;
  fault?: ClientFault;
  partnerId?: string;
  hours?: number;
  seed?: number;
  /** Calls a second at the day's peak (noon); a fifth of it at night. */
  peakCallsPerSecond?: number;
  /** The reporter's clock ahead of true time. */
  reporterSkewMs?: number;
  /** How much later than the gate the client believes its token expires (a clock behind, reading exp). */
  partnerSkewMs?: number;
  /** Reporters send an exchange up to this long after it happened (batches, out of order). */
  reportDelayMs?: number;
  start?: number;
}

interface Token {
  fingerprint: string;
  renewAt: number;
  expiresAt: number;
  /** The client learned it was refused: calls sent from then on do not use it. */
  droppedAt?: number;
}

interface Process {
  tokens: Map<number, Token>;
  blockFrom: number;
  blockedUntil: number;
  restartAt: number;
}

/** A seeded generator (mulberry32). */
export function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The partner's day as report batches (in the order reporters send them), and the count. */
export function productionTraffic(options: TrafficOptions): { batches: Exchange[][]; exchanges: number } {
  const sim = new Simulation(options);
  const exchanges = sim.run();
  const delay = options.reportDelayMs ?? 3_000;
  const reported = exchanges
    .map((exchange) => ({ exchange, sent: exchange.at + sim.random() * delay }))
    .sort((a, b) => a.sent - b.sent)
    .map((item) => item.exchange);
  const batches: Exchange[][] = [];
  for (let index = 0; index < reported.length; index += 500) batches.push(reported.slice(index, index + 500));
  return { batches, exchanges: reported.length };
}

class Simulation {
  readonly random: () => number;
  private readonly out: Exchange[] = [];
  private readonly processes: Process[];
  private readonly revoked = new Set<string>();
  private readonly throttles: [number, number][] = [];
  private readonly revocations: number[] = [];
  private issued = 0;
  private readonly partnerId: string;
  private readonly fault: ClientFault;
  private readonly start: number;
  private readonly end: number;

  constructor(private readonly options: TrafficOptions) {
    this.random = seeded(options.seed ?? 1);
    this.partnerId = options.partnerId ?? 'partner-a';
    this.fault = options.fault ?? {};
    this.start = options.start ?? Date.UTC(2026, 0, 5);
    this.end = this.start + (options.hours ?? 24) * hourMs;
    const count = options.profile.processes ?? 1;
    this.processes = Array.from({ length: count }, (_, index) => ({
      tokens: new Map(),
      blockFrom: 0,
      blockedUntil: 0,
      restartAt: options.profile.restartsDaily
        ? this.start + 14 * hourMs + index * 20_000
        : Number.POSITIVE_INFINITY,
    }));
    for (let day = this.start; day < this.end; day += 24 * hourMs) {
      // Four throttled stretches of two minutes a day, and one revocation.
      for (let n = 0; n < 4; n += 1) {
        const from = day + this.random() * 24 * hourMs;
        this.throttles.push([from, from + 120_000]);
      }
      this.revocations.push(day + (2 + this.random() * 20) * hourMs);
    }
  }

  run(): Exchange[] {
    const peak = this.options.peakCallsPerSecond ?? 1;
    let t = this.start;
    for (;;) {
      const hour = ((t - this.start) / hourMs) % 24;
      const rate = peak * (0.2 + 0.8 * ((1 - Math.cos((2 * Math.PI * hour) / 24)) / 2));
      t += (-Math.log(1 - this.random()) / rate) * 1000;
      if (t >= this.end) break;
      const process = this.processes[Math.floor(this.random() * this.processes.length)]!;
      // A page of the partner's app calls one to three operations at once.
      const fan = 1 + Math.floor(this.random() * 3);
      for (let n = 0; n < fan; n += 1) this.call(process, t + this.random() * 20, true);
    }
    return this.out.sort((a, b) => a.at - b.at);
  }

  private latency(): number {
    return 5 + this.random() * 145;
  }

  private reported(at: number): number {
    return Math.round(at + (this.options.reporterSkewMs ?? 3_000));
  }

  private call(process: Process, sent: number, retry: boolean): void {
    if (sent >= process.restartAt) {
      process.tokens.clear();
      process.restartAt += 24 * hourMs;
    }
    if (!this.fault.ignoreRetryAfter && sent >= process.blockFrom && sent < process.blockedUntil) return;
    const profile = this.options.profile;
    const set = Math.floor(this.random() * (profile.scopeSets ?? 1));
    let token = process.tokens.get(set);
    const stale =
      !token ||
      sent >= token.renewAt ||
      (token.droppedAt !== undefined && sent >= token.droppedAt && !this.fault.resendRevoked);
    if (stale || this.fault.tokenPerCall) {
      token = this.issue(sent, set);
      process.tokens.set(set, token);
      sent = this.lastReceived + 1;
    }
    if (this.revocations.length > 0 && sent >= this.revocations[0]!) {
      this.revocations.shift();
      this.revoked.add(token!.fingerprint);
    }
    this.send(process, token!, set, sent, retry);
  }

  private lastReceived = 0;

  private issue(sent: number, set: number): Token {
    const profile = this.options.profile;
    const arrived = sent + this.latency();
    const received = arrived + this.latency();
    this.lastReceived = received;
    this.issued += 1;
    const fingerprint = `fp${(this.options.seed ?? 1).toString(36)}-${this.issued.toString(36)}`;
    const scopes =
      profile.scopeSets === 2 ? (set === 0 ? allScopes.slice(0, 1) : allScopes.slice(1)) : allScopes;
    const at = this.reported(arrived);
    this.out.push({
      at,
      partnerId: this.partnerId,
      kind: 'token',
      method: 'POST',
      path: '/oauth/token',
      status: 200,
      fingerprint,
      scopesGranted: scopes,
      expiresAt: at + lifetimeMs,
      reporterId: 'gate',
    });
    // The client's reckoning: its clock when the answer came plus expires_in (whole seconds for some),
    // later than the gate's by the way back and by a clock behind the gate's.
    let expiry = received + lifetimeMs + (this.options.partnerSkewMs ?? 4_000);
    if (profile.wholeSeconds) expiry = Math.floor(expiry / 1000) * 1000;
    return {
      fingerprint,
      expiresAt: at + lifetimeMs,
      renewAt: expiry - profile.renewAheadMs(lifetimeMs, this.random),
    };
  }

  private send(process: Process, token: Token, set: number, sent: number, retry: boolean): void {
    const arrived = sent + this.latency();
    const answered = arrived + this.latency();
    const at = this.reported(arrived);
    const operation = set === 0 ? { method: 'GET', path: 'loans' } : { method: 'POST', path: 'loan_draft' };
    const exchange: Exchange = {
      at,
      partnerId: this.partnerId,
      kind: 'api',
      method: operation.method,
      path: `/v3/partner/${this.partnerId}/${operation.path}`,
      status: operation.method === 'GET' ? 200 : 201,
      fingerprint: token.fingerprint,
      reporterId: 'gateway',
    };
    const throttled = this.throttles.some(([from, to]) => arrived >= from && arrived < to);
    if (this.revoked.has(token.fingerprint) || at >= token.expiresAt) {
      exchange.status = 401;
      exchange.error = 'invalid_token';
    } else if (throttled && this.random() < 0.5) {
      exchange.status = 429;
      exchange.retryAfterSeconds = 10 + Math.floor(this.random() * 21);
    } else if (this.random() < 0.0005) {
      exchange.status = 503;
      if (this.random() < 0.5) exchange.retryAfterSeconds = 5;
    }
    this.out.push(exchange);
    if (exchange.status === 401) {
      if (this.fault.resendRevoked) return;
      token.droppedAt = Math.min(token.droppedAt ?? answered, answered);
      // Drop it, renew once and retry the call once.
      if (retry) this.call(process, answered + 1, false);
    } else if (exchange.retryAfterSeconds !== undefined && !this.fault.ignoreRetryAfter) {
      process.blockFrom = answered;
      process.blockedUntil = Math.max(process.blockedUntil, answered + exchange.retryAfterSeconds * 1000);
    }
  }
}
