import { UsageError } from '../../errors.js';
/**
 * The thresholds of the production checks, for production volumes: tokens live 12 h there (expires_in
 * 43199), partners run fleets of processes each with its own cache, and the evidence is the gateway's
 * log, not a recorded session. Each is the conformance suite's rule or tolerance where it carries over,
 * widened only by what production adds (fleets, clocks, batching); the Partner Lending API documentation
 * and the suite's check of the same id are the rule each enforces.
 */
export interface Thresholds {
  /** How long an exchange is held for others that arrive late (reporters batch), in ms. */
  skewMs: number;
  /** Exchanges held at most for late arrivals; past it the oldest are judged at once. */
  maxPending: number;
  /** Token records (fingerprints) kept per partner, least recently seen dropped first. */
  maxFingerprints: number;
  /** A check is one episode until it has not failed for this long: one finding per check per episode. */
  episodeQuietMs: number;
  /** client-token-reuse: the window token issues and API calls are counted over (whole minutes). */
  reuseWindowMs: number;
  /** client-token-reuse: token issues in the window below which nothing is judged (fleets, deploys). */
  reuseMinIssues: number;
  /** client-token-reuse: token issues per API call at or above which the window fails (0.5: a token per two calls). */
  reuseIssuesPerCall: number;
  /** client-token-reuse, the short window: issues and calls also counted over this (whole 5-s steps). */
  reuseShortWindowMs: number;
  /** client-token-reuse: token issues in the short window below which it is not judged. */
  reuseShortMinIssues: number;
  /** client-single-flight: token issues for one scope set within this many ms are a burst. */
  burstWindowMs: number;
  /** client-single-flight: how many issues make a burst. */
  burstIssues: number;
  /** client-single-flight: how long after a burst its tokens' use is looked at. */
  burstSettleMs: number;
  /** client-single-flight: the share of a burst's tokens used at most once that makes it a stampede. */
  burstAbandonedShare: number;
  /** Calls arriving this long after a refusal (401, 429, 503) were in flight when it was answered. */
  inFlightMs: number;
  /** client-retry-after: a call this close before the time given counts as on time. */
  retryAfterGraceMs: number;
  /** client-retry-after: early calls with the refused token tolerated per episode. */
  retryAfterTolerance: number;
  /** client-revocation-recovery: presentations of a token after its 401 invalid_token tolerated. */
  revokedReuseTolerance: number;
  /** client-no-expired-token: how long after its expiry a token may still arrive (clocks, in flight). */
  expiryGraceMs: number;
  /** client-granted-scope-respected: the window 403 insufficient_scope answers are counted over. */
  scopeWindowMs: number;
  /** client-granted-scope-respected: 403 insufficient_scope answers tolerated in the window. */
  scopeRefusals: number;
  /** client-bearer-header: the window API calls refused 401 without a token are counted over. */
  bearerWindowMs: number;
  /** client-bearer-header: API calls refused 401 without a token tolerated in the window. */
  bearerRefusals: number;
}

export const defaultThresholds: Readonly<Thresholds> = Object.freeze({
  // Reporters batch a few seconds; the evidence ingest takes records up to this late in order.
  skewMs: 5_000,
  // 5 s of a partner calling 400 times a second.
  maxPending: 2_000,
  // A fleet of 100 processes with 4 scope sets renewing twice holds 800 live tokens; a flood of
  // distinct fingerprints (a token per call) cycles through it and is judged by counts, not records.
  maxFingerprints: 1_024,
  // One finding an hour at most per check while it keeps failing, and a new one after an hour clean.
  episodeQuietMs: 3_600_000,
  // An hour holds several renewals of any fleet yet far less than a 12-h token's life.
  reuseWindowMs: 3_600_000,
  // 300 issues an hour: a fleet of 75 processes with 4 scope sets all restarted in the same hour stays
  // under it; a client taking a token per call crosses it at one call every 12 s.
  reuseMinIssues: 300,
  // A token per two calls: a correct client of any library, per process, asks once per ~11 h.
  reuseIssuesPerCall: 0.5,
  // The hour dilutes a switch: after an hour of correct calls, a token per call at the same rate
  // needs half an hour to reach the ratio. Over the last minute it needs at most that minute.
  reuseShortWindowMs: 60_000,
  // 600 issues in a minute (10 a second): twice the hour's floor, so a fleet restarting all at once
  // trips it only with 150 processes or more × 4 scope sets making under two calls a token that minute.
  reuseShortMinIssues: 600,
  // The suite's single flight: token requests for the same scopes in flight together (about a second).
  burstWindowMs: 1_000,
  // More processes than a rolling deploy starts in one second.
  burstIssues: 20,
  // Ten minutes for a fleet's processes to use the tokens they fetched again.
  burstSettleMs: 600_000,
  // A stampede keeps one token of the burst and drops the others after one call each.
  burstAbandonedShare: 0.8,
  // The suite allows 1 s for calls of the same moment held up by a busy machine (concurrentSetOutMs);
  // production adds the network to the gateway.
  inFlightMs: 2_000,
  // The suite allows 100 ms (retryAfterGraceMs); Retry-After is whole seconds and an HTTP date rounds.
  retryAfterGraceMs: 1_000,
  // The suite tolerates none past the in-flight ones; two more allow for a token shared by two processes.
  retryAfterTolerance: 2,
  // The suite tolerates one (revokedReuseTolerance: a single retry); a fleet sharing one token through
  // a store learns of the revocation once per process: up to 10 processes.
  revokedReuseTolerance: 10,
  // The suite's clockSlackSeconds (30 s for a clock ahead); libraries renew 0–300 s ahead, never after.
  expiryGraceMs: 30_000,
  // The suite tolerates one call per operation (outsideGrantTolerance: the one the 403 answers); per
  // partner over 10 minutes, one per process of a fleet of 10 sharing a token.
  scopeWindowMs: 600_000,
  scopeRefusals: 10,
  // The suite fails any call without a bearer header; a probe or a misrouted health check now and then
  // is not the client's integration.
  bearerWindowMs: 600_000,
  bearerRefusals: 10,
});

const minuteMultiples: readonly (keyof Thresholds)[] = ['reuseWindowMs', 'scopeWindowMs', 'bearerWindowMs'];
const stepMultiples: readonly (keyof Thresholds)[] = ['reuseShortWindowMs'];
/** The step the short windows count in. */
export const shortStepMs = 5_000;
const shares: readonly (keyof Thresholds)[] = ['reuseIssuesPerCall', 'burstAbandonedShare'];

/** The defaults with `given` laid over, checked: a clear error names the field and what it takes. */
export function resolveThresholds(given: Partial<Thresholds> | undefined): Thresholds {
  if (given === undefined) return { ...defaultThresholds };
  if (given === null || typeof given !== 'object' || Array.isArray(given))
    throw new UsageError(
      `createPartnerJudge: thresholds must be an object of numbers (fields: ${Object.keys(defaultThresholds).join(', ')}), got ${given === null ? 'null' : typeof given}`,
    );
  const resolved: Thresholds = { ...defaultThresholds };
  for (const [key, value] of Object.entries(given)) {
    if (!(key in defaultThresholds))
      throw new UsageError(
        `createPartnerJudge: unknown threshold ${JSON.stringify(key.slice(0, 40))} (the thresholds are ${Object.keys(defaultThresholds).join(', ')})`,
      );
    const field = key as keyof Thresholds;
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
      throw new UsageError(
        `createPartnerJudge: thresholds.${key} must be a finite number ≥ 0, got ${JSON.stringify(value)}; leave it out for its default (${defaultThresholds[field]})`,
      );
    if (minuteMultiples.includes(field) && (value < 60_000 || value % 60_000 !== 0))
      throw new UsageError(
        `createPartnerJudge: thresholds.${key} is counted in whole minutes: a multiple of 60000 ms, got ${value}`,
      );
    if (stepMultiples.includes(field) && (value < shortStepMs || value % shortStepMs !== 0))
      throw new UsageError(
        `createPartnerJudge: thresholds.${key} is counted in whole ${shortStepMs / 1000}-s steps: a multiple of ${shortStepMs} ms, got ${value}`,
      );
    if (shares.includes(field) && value > 1 && field === 'burstAbandonedShare')
      throw new UsageError(`createPartnerJudge: thresholds.${key} is a share between 0 and 1, got ${value}`);
    if (
      (field === 'maxPending' ||
        field === 'maxFingerprints' ||
        field === 'burstIssues' ||
        field === 'reuseShortMinIssues') &&
      value < 1
    )
      throw new UsageError(`createPartnerJudge: thresholds.${key} must be at least 1, got ${value}`);
    resolved[field] = value;
  }
  return resolved;
}
