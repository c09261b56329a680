import type { IssuedToken, RecordedExchange } from '../../session.js';
import { maxRenewalWindowSeconds } from '../../stage/scenarios.js';
import { grantableScopes, type SessionView, sortedIndex } from '../../view.js';

/** Usable life of a token as the client learns it: until the earlier of exp and expires_in. */
export const lifeOf = (token: IssuedToken) =>
  Math.max(0, Math.min(token.expAt, token.issuedAt + token.expiresIn * 1000) - token.issuedAt);

/** When a token stops being usable, as the client learns it (ms since start). */
export const endOf = (token: IssuedToken) => token.issuedAt + lifeOf(token);

/** Allowance for a client clock ahead of the stage's (one that renews from the JWT exp). */
export const clockSlackSeconds = 30;

/** What the session shows of a token's use: when a call first proved it works, when one was refused. */
interface Use {
  /** End of the first API call with it that was not refused (the client saw it work). */
  provenAt: number;
  /** End of the first API call with it answered 401 (revoked or expired). */
  refusedAt: number;
}

/** A token request made while the client held a live token covering it (long phase only). */
export interface AskedAgain {
  request: RecordedExchange;
  held: IssuedToken;
  /** The held token had answered a call before the request: the client knew it worked. */
  proven: boolean;
  /** Life the held token had left when the request arrived, in ms. */
  leftMs: number;
}

/**
 * Long-phase token requests made while the client held a live, unrefused long token covering the
 * scopes asked that the client is authorised for (what the token endpoint grants: asked ∩ authorised,
 * §5.5 — a client asking for all four scopes and granted two holds a covering token once it has
 * those two, and an MSAL-style cache filing tokens under the granted scopes misses it by itself), with more than the longest mainstream renewal window (300 s, and 30 s for a clock
 * ahead of the stage's) of life left: no renewal policy explains them. O(n log n): the tokens are indexed by scope set and issue time.
 */
export function askedAgainWhileHeld(view: SessionView): AskedAgain[] {
  // Two checks ask (reuse: the proven ones; single flight: the others): found once per session view.
  const known = askedAgain.get(view);
  if (known) return known;
  const found = findAskedAgain(view);
  askedAgain.set(view, found);
  return found;
}

const askedAgain = new WeakMap<SessionView, AskedAgain[]>();

function findAskedAgain(view: SessionView): AskedAgain[] {
  const { apiCalls, tokenRequests, tokens, issuedBy, session } = view;
  const use = new Map<string, Use>();
  for (const call of apiCalls) {
    const ref = call.token?.ref;
    if (ref === undefined) continue;
    const entry = use.get(ref) ?? { provenAt: Number.POSITIVE_INFINITY, refusedAt: Number.POSITIVE_INFINITY };
    if (call.exchange.status === 401) entry.refusedAt = Math.min(entry.refusedAt, call.exchange.end);
    else if (call.exchange.status > 0) entry.provenAt = Math.min(entry.provenAt, call.exchange.end);
    use.set(ref, entry);
  }
  // Long tokens by scope set, in issue order: the candidates for a request are the latest of each set.
  const bySet = new Map<string, IssuedToken[]>();
  for (const token of [...tokens.values()].sort((a, b) => a.issuedAt - b.issuedAt)) {
    if (token.phase !== 'long') continue;
    const key = [...token.scope].sort().join(' ');
    const list = bySet.get(key);
    if (list) list.push(token);
    else bySet.set(key, [token]);
  }
  const authorised = session.stage.authorizedScopes;
  // A client that reads the JWT exp with a clock ahead of the stage's renews a little earlier still.
  const windowMs = (maxRenewalWindowSeconds + clockSlackSeconds) * 1000;
  const found: AskedAgain[] = [];
  for (const request of tokenRequests) {
    if (request.at < session.stage.shortPhaseMs) continue;
    // What this request could be granted: asked ∩ authorised. A request for nothing it may have
    // (only scopes outside the grant) is refused or narrowed to nothing: not a renewal, not judged here.
    const wanted = grantableScopes(request, authorised);
    if (wanted.length === 0) continue;
    let best: AskedAgain | undefined;
    for (const list of bySet.values()) {
      if (!wanted.every((scope) => list[0]!.scope.includes(scope))) continue;
      // The latest token of the set whose answer had reached the client before this request.
      const low = sortedIndex(list, request.at, (token) => token.issuedAt, true);
      for (let index = low - 1; index >= 0 && index >= low - 4; index -= 1) {
        const token = list[index]!;
        const issuer = issuedBy.get(token.ref);
        if (!issuer || issuer.seq === request.seq || issuer.end > request.at) continue;
        if (token.revokedAt !== undefined && token.revokedAt <= request.at) break;
        const seen = use.get(token.ref);
        if (seen && seen.refusedAt <= request.at) break;
        const leftMs = endOf(token) - request.at;
        if (leftMs > windowMs && (!best || token.issuedAt > best.held.issuedAt))
          best = {
            request,
            held: token,
            proven: (seen?.provenAt ?? Number.POSITIVE_INFINITY) <= request.at,
            leftMs,
          };
        break;
      }
    }
    if (best) found.push(best);
  }
  return found;
}

/**
 * Short-phase token requests made while a live short token covering the same scopes was held: the
 * mark of a renewal window longer than the short tokens' life (allowed there). O(n log n).
 */
export function renewedAheadInShortPhase(view: SessionView): number {
  const { tokenRequests, tokens, session } = view;
  const short = [...tokens.values()]
    .filter((token) => token.phase === 'short')
    .sort((a, b) => a.issuedAt - b.issuedAt);
  const authorised = session.stage.authorizedScopes;
  let count = 0;
  for (const request of tokenRequests) {
    if (request.at >= session.stage.shortPhaseMs) continue;
    const held = short[sortedIndex(short, request.at, (token) => token.issuedAt) - 1];
    if (!held || endOf(held) <= request.at || (held.revokedAt !== undefined && held.revokedAt <= request.at))
      continue;
    const wanted = grantableScopes(request, authorised);
    if (wanted.length > 0 && wanted.every((scope) => held.scope.includes(scope))) count += 1;
  }
  return count;
}
