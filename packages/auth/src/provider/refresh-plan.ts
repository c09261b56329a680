import type { StoredToken } from '../token-store.js';

/** The refresh windows of a provider (`RefreshOptions` resolved, in ms and shares). */
export interface RefreshWindows {
  softWindowMs: number;
  softWindowRatio: number;
  hardWindowMs: number;
  jitterRatio: number;
}

/** When a held token is refreshed, drawn once per token (so its jitter is stable). Epoch ms. */
export interface RefreshPlan {
  /** From here on one background refresh runs while callers keep the token. */
  refreshAt: number;
  /** From here on callers wait for a fresh token. */
  hardAt: number;
  /** Before this its replacement is not asked for (whole-second alignment), or 0. */
  renewAt: number;
}

/** Tokens with a whole-second exp and at most this lifetime are renewed at their exp. */
export const ALIGN_MAX_LIFETIME_MS = 6_000;
/** The hard window is at most this share of a token's lifetime. */
export const HARD_SHARE = 0.05;
/**
 * The hard window (the safety window: the least a token has left when it is handed over) is at least
 * this long, up to HARD_FLOOR_SHARE of the lifetime and never more than `hardWindowMs`: 5 % of a 2-s
 * token (100 ms) is less than a busy host's stall.
 */
export const HARD_FLOOR_MS = 300;
/** The floor of the hard window takes at most this share of a token's lifetime. */
export const HARD_FLOOR_SHARE = 0.2;
/** The soft window is at most this share of a token's lifetime: a short token is refreshed about once. */
export const SOFT_SHARE = 0.12;

/**
 * The refresh plan of a token: a pure function of the token's times, the windows and a random draw in
 * [0, 1). Windows scale with the lifetime: the hard window is 5 % of it but at least 300 ms (at most a
 * fifth of the lifetime), so a 2-s token gets a 0.3-s hard window and is refreshed in the background
 * at about 85 % of its life, so it is asked for about once per lifetime.
 */
export function planRefresh(
  entry: Pick<StoredToken, 'obtainedAt' | 'expiresAt'>,
  windows: RefreshWindows,
  random: () => number,
): RefreshPlan {
  const lifetime = Math.max(0, entry.expiresAt - entry.obtainedAt);
  // A server that counts exp from the start of the current second (exp = floor(now) + expires_in, as
  // most do) gives a token asked for before this one's exp only one second more than this one: for a
  // short token that doubles the requests. Such a token is renewed at its exp instead, callers waiting
  // through its hard window (the request's latency plus the hard window).
  const wholeSeconds = Math.ceil(lifetime / 1000) * 1000;
  const aligned = entry.expiresAt % 1000 === 0 && wholeSeconds <= ALIGN_MAX_LIFETIME_MS;
  // The same rounding cuts a token asked for late in a second short: a 1-s token issued at 0.99 s
  // lives 10 ms. Its safety window is sized on the whole seconds it was issued for (200 ms), not on
  // the 10 ms left, so it is renewed at its exp instead of being handed out to expire in flight.
  const sized = aligned ? wholeSeconds : lifetime;
  const hard = Math.max(
    Math.min(windows.hardWindowMs, HARD_SHARE * sized),
    Math.min(windows.hardWindowMs, HARD_FLOOR_MS, HARD_FLOOR_SHARE * sized),
  );
  let soft = 0;
  if (!aligned) {
    const base =
      Math.max(windows.softWindowMs, windows.softWindowRatio * lifetime) *
      (1 + windows.jitterRatio * random());
    const cap = SOFT_SHARE * lifetime;
    soft = base <= cap ? base : cap * (1 - (windows.jitterRatio / 2) * random());
  }
  return {
    refreshAt: entry.expiresAt - Math.max(soft, hard),
    hardAt: entry.expiresAt - hard,
    renewAt: aligned ? entry.expiresAt : 0,
  };
}
