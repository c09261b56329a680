import type { Exchange } from '../../evidence/exchange.js';
import type { Context } from './context.js';
import { maxScopeSets } from './context.js';
import { shortFingerprint, type TokenRecord } from './tokens.js';

const seconds = (ms: number) => `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
const iso = (at: number) => new Date(at).toISOString();
const partnerPath = /^\/v3\/partner\/([^/]+)(?:\/|$)/;

/** A token issue (the token endpoint answered 200 with a token): reuse and single flight. */
export function onTokenIssue(ctx: Context, exchange: Exchange, fingerprint: string): void {
  const record = ctx.tokens.touch(fingerprint);
  record.issuedAt = exchange.at;
  if (exchange.expiresAt !== undefined) record.expiresAt = exchange.expiresAt;
  const scopes = [...(exchange.scopesGranted ?? [])].sort().join(' ');
  record.scopes = scopes;
  ctx.issues.add(exchange.at);
  ctx.shortIssues.add(exchange.at);
  ctx.rings['client-token-reuse'].push(exchange);
  reuse(ctx, exchange);
  noteBurst(ctx, exchange, fingerprint, scopes);
}

/**
 * Token issues per API call over the hour, and over the last minute so that an hour of correct calls
 * does not hide a switch to a token per call: either window failing is one finding.
 */
function reuse(ctx: Context, exchange: Exchange): void {
  const { thresholds: t } = ctx;
  const windows = [
    { issues: ctx.issues, calls: ctx.calls, min: t.reuseMinIssues },
    { issues: ctx.shortIssues, calls: ctx.shortCalls, min: t.reuseShortMinIssues },
  ];
  for (const window of windows) {
    const issues = window.issues.sum(exchange.at);
    const calls = window.calls.sum(exchange.at);
    if (issues < window.min || issues < t.reuseIssuesPerCall * calls) continue;
    const from = window.issues.from();
    ctx.violation(
      'client-token-reuse',
      exchange,
      from,
      () =>
        `${issues} token issues for ${calls} API calls since ${iso(from)} (${(issues / Math.max(1, calls)).toFixed(2)} per call; at most ${t.reuseIssuesPerCall} with ${window.min} or more issues): a token is not reused for its 12-h life`,
      () => ctx.rings['client-token-reuse'].list(),
    );
    return;
  }
}

function noteBurst(ctx: Context, exchange: Exchange, fingerprint: string, scopes: string): void {
  const { thresholds: t } = ctx;
  let recent = ctx.recent.get(scopes);
  if (recent) ctx.recent.delete(scopes);
  else {
    recent = { times: [], fingerprints: [] };
    if (ctx.recent.size >= maxScopeSets) ctx.recent.delete(ctx.recent.keys().next().value as string);
  }
  ctx.recent.set(scopes, recent);
  recent.times.push(exchange.at);
  recent.fingerprints.push(fingerprint);
  if (recent.times.length > t.burstIssues) {
    recent.times.shift();
    recent.fingerprints.shift();
  }
  const first = recent.times[0]!;
  if (ctx.burst || recent.times.length < t.burstIssues || exchange.at - first > t.burstWindowMs) return;
  const members = new Set(recent.fingerprints);
  ctx.burst = {
    from: first,
    at: exchange.at,
    scopes,
    fingerprints: [...recent.fingerprints],
    callsBefore: ctx.apiCalls,
    exchanges: ctx.rings['client-token-reuse']
      .list()
      .filter((item) => item.fingerprint !== undefined && members.has(item.fingerprint)),
  };
  recent.times.length = 0;
  recent.fingerprints.length = 0;
}

/**
 * A burst settled: a stampede when most of its tokens were used at most once while the partner kept
 * calling (a fleet started together uses each process's token again). Unknown (dropped) records count
 * as used again.
 */
export function settleBurst(ctx: Context, exchange: Exchange): void {
  const burst = ctx.burst;
  const { thresholds: t } = ctx;
  if (!burst || exchange.at < burst.at + t.burstSettleMs) return;
  ctx.burst = undefined;
  const callsSince = ctx.apiCalls - burst.callsBefore;
  if (callsSince < burst.fingerprints.length * 2) return;
  const abandoned = burst.fingerprints.filter((fingerprint) => {
    const record = ctx.tokens.peek(fingerprint);
    return record !== undefined && record.uses <= 1;
  }).length;
  if (abandoned < t.burstAbandonedShare * burst.fingerprints.length) return;
  ctx.violation(
    'client-single-flight',
    exchange,
    burst.from,
    () =>
      `${burst.fingerprints.length} tokens for "${burst.scopes}" issued within ${seconds(burst.at - burst.from)} at ${iso(burst.from)}, and ${abandoned} of them used at most once in the ${seconds(t.burstSettleMs)} after while the partner made ${callsSince} API calls: concurrent callers each fetched a token instead of sharing one request`,
    () => burst.exchanges,
  );
}

/** An API call: every check that reads calls. */
export function onApiCall(ctx: Context, exchange: Exchange): void {
  ownPartner(ctx, exchange);
  const fingerprint = exchange.fingerprint;
  if (fingerprint === undefined) {
    if (exchange.status === 401) bearer(ctx, exchange);
    return;
  }
  const record = ctx.tokens.touch(fingerprint);
  record.uses += 1;
  ctx.apiCalls += 1;
  ctx.calls.add(exchange.at);
  ctx.shortCalls.add(exchange.at);
  expiry(ctx, exchange, record, fingerprint);
  resent(ctx, exchange, record, fingerprint);
  retryAfter(ctx, exchange, record, fingerprint);
  if (exchange.status === 401 && exchange.error === 'invalid_token' && record.refused === undefined)
    if (record.expiresAt === undefined || exchange.at < record.expiresAt) record.refused = exchange;
  if (exchange.status === 403 && exchange.error === 'insufficient_scope') scope(ctx, exchange, record);
}

function expiry(ctx: Context, exchange: Exchange, record: TokenRecord, fingerprint: string): void {
  const grace = ctx.thresholds.expiryGraceMs;
  if (record.expiresAt === undefined || exchange.at <= record.expiresAt + grace) return;
  ctx.rings['client-no-expired-token'].push(exchange);
  const expiresAt = record.expiresAt;
  ctx.violation(
    'client-no-expired-token',
    exchange,
    expiresAt,
    () =>
      `${exchange.method} ${exchange.path} presented token ${shortFingerprint(fingerprint)} ${seconds(exchange.at - expiresAt)} after it expired at ${iso(expiresAt)} (grace ${seconds(grace)} for clocks and calls in flight)`,
    () => ctx.rings['client-no-expired-token'].list().filter((item) => item.fingerprint === fingerprint),
  );
}

function resent(ctx: Context, exchange: Exchange, record: TokenRecord, fingerprint: string): void {
  const refused = record.refused;
  const t = ctx.thresholds;
  if (!refused || exchange === refused || exchange.at <= refused.at + t.inFlightMs) return;
  record.resent += 1;
  ctx.rings['client-revocation-recovery'].push(exchange);
  if (record.resent <= t.revokedReuseTolerance) return;
  ctx.violation(
    'client-revocation-recovery',
    exchange,
    refused.at,
    () =>
      `token ${shortFingerprint(fingerprint)} was refused 401 invalid_token at ${iso(refused.at)} and presented again ${record.resent} times after (${t.revokedReuseTolerance} tolerated, calls within ${seconds(t.inFlightMs)} were in flight): drop a refused token, ask for a new one and retry once`,
    () => [
      refused,
      ...ctx.rings['client-revocation-recovery'].list().filter((item) => item.fingerprint === fingerprint),
    ],
  );
}

function retryAfter(ctx: Context, exchange: Exchange, record: TokenRecord, fingerprint: string): void {
  const t = ctx.thresholds;
  const answer = record.waitAnswer;
  if (answer && record.waitUntil !== undefined) {
    if (exchange.at >= record.waitUntil - t.retryAfterGraceMs) {
      record.waitAnswer = undefined;
      record.waitUntil = undefined;
      record.early = 0;
    } else if (exchange !== answer && exchange.at > answer.at + t.inFlightMs) {
      record.early += 1;
      ctx.rings['client-retry-after'].push(exchange);
      if (record.early > t.retryAfterTolerance) {
        const until = record.waitUntil;
        ctx.violation(
          'client-retry-after',
          exchange,
          answer.at,
          () =>
            `${answer.status} at ${iso(answer.at)} said Retry-After ${answer.retryAfterSeconds} s; token ${shortFingerprint(fingerprint)} was presented ${record.early} times before ${iso(until)} (${t.retryAfterTolerance} tolerated, calls within ${seconds(t.inFlightMs)} were in flight), the latest ${seconds(until - exchange.at)} early`,
          () => [
            answer,
            ...ctx.rings['client-retry-after'].list().filter((item) => item.fingerprint === fingerprint),
          ],
        );
      }
    }
  }
  const wait = exchange.retryAfterSeconds;
  if ((exchange.status !== 429 && exchange.status !== 503) || wait === undefined || !(wait > 0)) return;
  // A refusal inside a running wait extends it without starting the count again: a client that ignores
  // the wait is refused at every call.
  if (record.waitAnswer === undefined) {
    record.waitAnswer = exchange;
    record.early = 0;
  }
  record.waitUntil = Math.max(record.waitUntil ?? 0, exchange.at + wait * 1000);
}

function scope(ctx: Context, exchange: Exchange, record: TokenRecord): void {
  const t = ctx.thresholds;
  ctx.scopeRefusals.add(exchange.at);
  ctx.rings['client-granted-scope-respected'].push(exchange);
  const refusals = ctx.scopeRefusals.sum(exchange.at);
  if (refusals <= t.scopeRefusals) return;
  ctx.violation(
    'client-granted-scope-respected',
    exchange,
    ctx.scopeRefusals.from(),
    () =>
      `${refusals} API calls refused 403 insufficient_scope since ${iso(ctx.scopeRefusals.from())} (${t.scopeRefusals} tolerated), the latest ${exchange.method} ${exchange.path} with a token granted "${record.scopes ?? 'unknown: issued before the judge began'}": read the scope of the token answer before calling`,
    () => ctx.rings['client-granted-scope-respected'].list(),
  );
}

function bearer(ctx: Context, exchange: Exchange): void {
  const t = ctx.thresholds;
  ctx.bearerRefusals.add(exchange.at);
  ctx.rings['client-bearer-header'].push(exchange);
  const refusals = ctx.bearerRefusals.sum(exchange.at);
  if (refusals <= t.bearerRefusals) return;
  ctx.violation(
    'client-bearer-header',
    exchange,
    ctx.bearerRefusals.from(),
    () =>
      `${refusals} API calls without a bearer token refused 401 since ${iso(ctx.bearerRefusals.from())} (${t.bearerRefusals} tolerated), the latest ${exchange.method} ${exchange.path}${exchange.error ? ` (${exchange.error})` : ''}: send Authorization: Bearer <token> on every call`,
    () => ctx.rings['client-bearer-header'].list(),
  );
}

function ownPartner(ctx: Context, exchange: Exchange): void {
  // The common case without a regular expression: the path names the partner itself.
  if (exchange.path.startsWith(ctx.ownPath)) return;
  const match = partnerPath.exec(exchange.path);
  if (!match) return;
  let inPath: string;
  try {
    inPath = decodeURIComponent(match[1]!);
  } catch {
    inPath = match[1]!;
  }
  if (inPath === exchange.partnerId) return;
  ctx.rings['client-own-partner'].push(exchange);
  ctx.violation(
    'client-own-partner',
    exchange,
    exchange.at,
    () =>
      `${exchange.method} ${exchange.path.slice(0, 200)} (answered ${exchange.status}) names partner ${JSON.stringify(inPath.slice(0, 80))}, not the token's partner ${JSON.stringify(exchange.partnerId)}: take the partner id from the token answer`,
    () => ctx.rings['client-own-partner'].list(),
  );
}
