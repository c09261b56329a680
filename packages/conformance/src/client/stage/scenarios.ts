import { scopes as allScopes, matchPath, operations } from '@partner-lending/spec';
import type { IssuedToken, RecordedExchange, ScenarioName, ScenarioRecord } from '../session.js';

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
/** Short lifetimes last this many token lifetimes from the start; long tokens are issued after. */
export const shortPhaseLifetimes = 3;
/** The longest renewal window (seconds ahead of expiry) of mainstream client-credentials libraries. */
export const maxRenewalWindowSeconds = 300;
/** The grant of the stage's client under `narrowed-grant` unless `--scopes` says otherwise. */
export const defaultScopes = ['read:loans', 'create:loan_draft'];
/**
 * What one token request is granted at most when the client is authorised for every scope (a
 * certification run): the narrowed grant is then played by the token endpoint, once.
 */
export const narrowedGrantScopes: readonly string[] = ['read:loans'];

/** Whether `grant` authorises every scope: `narrowed-grant` then narrows one token request instead. */
export const grantsEveryScope = (grant: readonly string[]) =>
  allScopes.every((scope) => grant.includes(scope));
/**
 * The two phases of a session, and why, in one sentence for every report: expiry is judged on short
 * tokens, reuse on long ones, so that a client renewing up to 300 s ahead of expiry is judged fairly.
 */
export function phasesPlan(ttlSeconds: number, longTtlSeconds: number, shortPhaseMs: number): string {
  return `for the first ${Math.round(shortPhaseMs / 1000)} s tokens live ${ttlSeconds} s: renewal and expiry are judged there (never an expired token, one token request at a time; a renewal window longer than such a token's life renews before every call, which is allowed); after that they live ${longTtlSeconds} s: reuse is judged on these, since no renewal window up to ${maxRenewalWindowSeconds} s explains a new token while one of them is held`;
}

export function scenarioPlans(grant: readonly string[]): Record<ScenarioName, string> {
  return {
    revocation: `the token of the ${ordinal(revocationCall)} API call that would have succeeded is revoked at that call (or, when that token is the narrowed grant's, of the first such call after it with another token: the narrowed token stays usable): it and every later call carrying that token get 401 invalid_token`,
    throttle: `the ${ordinal(throttleCall)} API call that would have succeeded gets 429 with Retry-After: ${throttleRetryAfterSeconds}`,
    unavailable: `the first create (POST) that would have succeeded gets 503 with Retry-After: ${unavailableRetryAfterSeconds}; nothing is created`,
    'narrowed-grant': grantsEveryScope(grant)
      ? `the client is authorised for all four scopes, and the first token request that asks for a scope other than ${narrowedGrantScopes.join(' ')} (or, with no scope parameter, would be granted one) is granted ${narrowedGrantScopes.join(' ')} at most — refused invalid_scope when it asked for none of it; a correct client does not call an operation its token lacks, and asks again later`
      : `the client is authorised for ${grant.join(' ')} only (not all four scopes); a token's scope is requested ∩ authorised, and an operation outside it gets 403 insufficient_scope`,
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

/** An answer the stage gives itself instead of the API's. */
export interface StageAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const json = (value: unknown) => JSON.stringify(value);

/** The answer of an injected scenario step: a revocation's 401, the throttle's 429, the outage's 503. */
export function injectedAnswer(injected: NonNullable<RecordedExchange['injected']>): StageAnswer {
  if (injected === 'revoked') {
    const description = 'the access token was revoked';
    return {
      status: 401,
      headers: {
        'content-type': 'application/json',
        'www-authenticate': `Bearer realm="partner-api", error="invalid_token", error_description="${description}"`,
      },
      body: json({ error: 'invalid_token', error_description: description }),
    };
  }
  if (injected === 'throttled')
    return {
      status: 429,
      headers: { 'content-type': 'application/json', 'retry-after': String(throttleRetryAfterSeconds) },
      body: json({
        error: 'rate_limited',
        error_description: 'too many requests; retry after the time given',
      }),
    };
  return {
    status: 503,
    headers: { 'content-type': 'application/json', 'retry-after': String(unavailableRetryAfterSeconds) },
    body: json({
      error: 'unavailable',
      error_description: 'the service is unavailable; nothing was created',
    }),
  };
}

/** The scenario plan as it plays: which steps are on, which fired when, and what to inject next. */
export interface ScenarioPlayer {
  readonly records: ScenarioRecord[];
  /** The player's whole state (a JSON value): a stage whose state lives elsewhere restores the player from it. */
  state(): ScenarioState;
  /**
   * A token request asked for `scopes` (empty: no scope parameter): the narrowed grant fires the first
   * time it asks beyond the grant. When the client is authorised for every scope, the first request
   * asking beyond `narrowedGrantScopes` is narrowed: the answer is the scopes to grant it instead (empty:
   * refuse it invalid_scope); undefined grants what was asked.
   */
  tokenRequested(scopes: readonly string[], at: number, seq: number): readonly string[] | undefined;
  /** The step to play on an API call carrying `issued` (a well-formed bearer), if any. */
  injectionFor(
    method: string,
    path: string,
    issued: IssuedToken | undefined,
    now: number,
  ): RecordedExchange['injected'];
  /** An injected step was answered: it fired now. */
  injected(injected: NonNullable<RecordedExchange['injected']>, at: number, seq: number): void;
  /** The API answered a call: a 403 insufficient_scope shows the narrowed grant. */
  apiAnswered(status: number, challenge: string | undefined, at: number, seq: number): void;
}

/** What a scenario player remembers between calls: which steps fired when, and the eligible calls so far. */
export interface ScenarioState {
  records: ScenarioRecord[];
  eligibleCalls: number;
}

/**
 * Plays the scenario plan. `restored` resumes a player from its `state()` (a hosted stage keeps it in
 * a database, so that every instance serving a run plays the same plan).
 */
export function playScenarios(
  enabled: ReadonlySet<ScenarioName>,
  grant: readonly string[],
  restored?: ScenarioState,
): ScenarioPlayer {
  const plans = scenarioPlans(grant);
  const records: ScenarioRecord[] =
    restored?.records.map((item) => ({ ...item })) ??
    scenarioNames.map((name) => ({
      name,
      enabled: enabled.has(name),
      plan: plans[name],
    }));
  const scenario = (name: ScenarioName) => records.find((item) => item.name === name)!;
  const fire = (name: ScenarioName, at: number, seq: number) => {
    const record = scenario(name);
    if (record.firedAt === undefined) Object.assign(record, { firedAt: at, seq });
  };
  let eligibleCalls = restored?.eligibleCalls ?? 0;
  return {
    records,
    state: () => ({ records: records.map((item) => ({ ...item })), eligibleCalls }),
    tokenRequested(scopes, at, seq) {
      const narrowed = scenario('narrowed-grant');
      if (!narrowed.enabled || narrowed.firedAt !== undefined) return undefined;
      if (!grantsEveryScope(grant)) {
        if (scopes.some((item) => !grant.includes(item))) fire('narrowed-grant', at, seq);
        return undefined;
      }
      const asked = scopes.length > 0 ? scopes.filter((item) => grant.includes(item)) : grant;
      if (asked.every((item) => narrowedGrantScopes.includes(item))) return undefined;
      fire('narrowed-grant', at, seq);
      return asked.filter((item) => narrowedGrantScopes.includes(item));
    },
    injectionFor(method, path, issued, now) {
      if (!issued) return undefined;
      if (issued.revokedAt !== undefined) return 'revoked';
      if (now >= issued.expAt) return undefined;
      const match = matchPath(path);
      const operationId = match?.methods[method];
      if (!operationId || operations[operationId].server !== 'api') return undefined;
      if (match.params.partner_id !== issued.partnerId) return undefined;
      if (!issued.scope.includes(operations[operationId].scope)) return undefined;
      eligibleCalls += 1;
      const revocation = scenario('revocation');
      // Never the narrowed grant's token: it stays usable, so that a client ignoring the granted scope
      // would call an operation outside it with that token (client-granted-scope-respected judges it).
      const narrowed = scenario('narrowed-grant');
      const narrowedToken = narrowed.firedAt !== undefined && narrowed.seq === issued.seq;
      if (
        revocation.enabled &&
        revocation.firedAt === undefined &&
        eligibleCalls >= revocationCall &&
        !narrowedToken
      ) {
        issued.revokedAt = now;
        return 'revoked';
      }
      const throttle = scenario('throttle');
      if (throttle.enabled && throttle.firedAt === undefined && eligibleCalls >= throttleCall)
        return 'throttled';
      const unavailable = scenario('unavailable');
      if (unavailable.enabled && unavailable.firedAt === undefined && method === 'POST') return 'unavailable';
      return undefined;
    },
    injected(injected, at, seq) {
      fire(
        injected === 'revoked' ? 'revocation' : injected === 'throttled' ? 'throttle' : 'unavailable',
        at,
        seq,
      );
    },
    apiAnswered(status, challenge, at, seq) {
      if (scenario('narrowed-grant').enabled && status === 403 && /insufficient_scope/.test(challenge ?? ''))
        fire('narrowed-grant', at, seq);
    },
  };
}
