import { UsageError } from '../errors.js';
import type { Exchange } from '../evidence/exchange.js';

/**
 * What the production judge hands over when a decisive check fails on a partner's evidence (the
 * judge's `Finding`, by its shape): the check, the partner, when, why, the exchanges that show it and
 * the window judged (ms since the epoch).
 */
export interface RegressionFinding {
  check: string;
  partnerId: string;
  at: number;
  detail: string;
  exchanges: readonly Exchange[];
  window: { from: number; to: number };
}

/** Most exchanges kept with a regression (the judge hands at most as many). */
export const maxEvidenceExchanges = 20;
/** Longest detail kept, in characters (longer is cut, marked with …). */
export const maxDetailLength = 2000;

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are replaced, never stored
const control = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** Text the judge wrote, as kept: control and bidirectional characters as spaces, at most `max` characters. */
const text = (value: string, max: number) => {
  const clean = value.replace(control, ' ');
  return clean.length > max ? `${clean.slice(0, max - 1)}…` : clean;
};

const isTime = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

/** The fields of one exchange as kept: only `Exchange`'s own, each of its type and bounded. */
function keptExchange(exchange: Exchange): Exchange {
  const kept: Exchange = {
    at: exchange.at,
    partnerId: text(String(exchange.partnerId), 200),
    kind: exchange.kind === 'token' ? 'token' : 'api',
    method: text(String(exchange.method), 16),
    path: text(String(exchange.path), 500),
    status: Number(exchange.status),
    reporterId: text(String(exchange.reporterId), 200),
  };
  if (typeof exchange.fingerprint === 'string') kept.fingerprint = text(exchange.fingerprint, 128);
  if (Array.isArray(exchange.scopesGranted))
    kept.scopesGranted = exchange.scopesGranted.slice(0, 32).map((scope) => text(String(scope), 100));
  if (isTime(exchange.expiresAt)) kept.expiresAt = exchange.expiresAt;
  if (typeof exchange.retryAfterSeconds === 'number' && Number.isFinite(exchange.retryAfterSeconds))
    kept.retryAfterSeconds = exchange.retryAfterSeconds;
  if (typeof exchange.error === 'string') kept.error = text(exchange.error, 100);
  return kept;
}

/**
 * A finding checked and bounded for keeping: throws a UsageError saying what is wrong (what was
 * expected) for one that cannot be a finding; keeps at most 20 exchanges, each with `Exchange`'s own
 * fields only (nothing else a caller passed along, so no token can ride in), and a detail of at most
 * 2000 characters.
 */
export function checkFinding(finding: RegressionFinding): RegressionFinding {
  const problems: string[] = [];
  if (typeof finding.check !== 'string' || !/^[A-Za-z0-9._:-]{1,100}$/.test(finding.check))
    problems.push('check must be a check id (1 to 100 letters, digits, . _ : -)');
  if (typeof finding.partnerId !== 'string' || finding.partnerId === '' || finding.partnerId.length > 200)
    problems.push('partnerId must be a partner id');
  if (!isTime(finding.at)) problems.push('at must be a time in ms since the epoch');
  if (!isTime(finding.window?.from) || !isTime(finding.window?.to) || finding.window.from > finding.window.to)
    problems.push('window must be {from, to} in ms since the epoch, from ≤ to');
  if (!Array.isArray(finding.exchanges)) problems.push('exchanges must be a list of exchanges');
  else if (finding.exchanges.some((exchange) => !isTime(exchange?.at)))
    problems.push('every exchange needs its time (at, ms since the epoch)');
  if (problems.length > 0)
    throw new UsageError(`not a regression finding: ${problems.join('; ')}; the judge's Finding is expected`);
  return {
    check: finding.check,
    partnerId: finding.partnerId,
    at: finding.at,
    detail: text(String(finding.detail ?? ''), maxDetailLength),
    exchanges: finding.exchanges.slice(0, maxEvidenceExchanges).map(keptExchange),
    window: { from: finding.window.from, to: finding.window.to },
  };
}
