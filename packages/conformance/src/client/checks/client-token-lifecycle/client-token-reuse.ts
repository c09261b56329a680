import {
  clientFailed,
  clientNotVerified,
  clientPassed,
  defineClientCheck,
  offendersFirst,
} from '../../check.js';
import type { IssuedToken } from '../../session.js';
import { line, requestedScopes, seconds } from '../../view.js';

/** Usable life of a token as the client learns it: until the earlier of exp and expires_in. */
export const lifeOf = (token: IssuedToken) =>
  Math.max(0, Math.min(token.expAt, token.issuedAt + token.expiresIn * 1000) - token.issuedAt);

/** Index of the first token issued after `at` (tokens sorted by issuedAt). */
function upperBound(tokens: readonly IssuedToken[], at: number): number {
  let low = 0;
  let high = tokens.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (tokens[mid]!.issuedAt <= at) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** A token request is early when a held token covering it had more than this share of its life left. */
export const earlyShare = 0.5;

export default defineClientCheck({
  id: 'client-token-reuse',
  title: 'A token is reused until it nears expiry: at most one token request per lifetime',
  category: 'client-token-lifecycle',
  severity: 'should',
  reference: 'API documentation §5.4; RFC 6749 §5.1 (expires_in)',
  citation:
    '"The token is valid for expires_in seconds; after that it is no longer usable. Refreshing a token: obtain a new one through the same request." (Partner Lending API — Authentication and Access §5.4) — a token is used for its lifetime, and renewed after it',
  precondition: 'the journey made at least two API calls with tokens the stage issued',
  records:
    'every token request: whether a token the client already held (not revoked, covering the requested scopes) still had more than half its life left; requests per lifetime',
  fix: 'cache the token and reuse it for every call until shortly before it expires (for example when 10–20 % of its life is left); do not request a token per call',
  judge({ apiCalls, tokenRequests, tokens, issuedBy, session }) {
    const used = apiCalls.filter((call) => call.token !== undefined);
    if (used.length < 2)
      return clientNotVerified('the journey made fewer than two API calls with issued tokens');
    const held = [...tokens.values()].sort((a, b) => a.issuedAt - b.issuedAt);
    const longest = held.reduce((max, token) => Math.max(max, lifeOf(token)), 0);
    const authorised = session.stage.authorizedScopes;
    const early: Array<{ request: (typeof tokenRequests)[number]; by: IssuedToken }> = [];
    for (const request of tokenRequests) {
      const wanted = requestedScopes(request, authorised);
      // Newest first, among the tokens young enough to count (a window, not every token ever issued).
      let by: IssuedToken | undefined;
      for (let index = upperBound(held, request.at) - 1; index >= 0; index -= 1) {
        const token = held[index]!;
        if (token.issuedAt < request.at - longest * earlyShare) break;
        const issuer = issuedBy.get(token.ref);
        if (!issuer || issuer.seq === request.seq || issuer.end > request.at) continue;
        if (token.revokedAt !== undefined && token.revokedAt <= request.at) continue;
        if (!wanted.every((scope) => token.scope.includes(scope))) continue;
        if (request.at < token.issuedAt + lifeOf(token) * earlyShare) {
          by = token;
          break;
        }
      }
      if (by) early.push({ request, by });
    }
    // Requests per lifetime, per set of scopes asked (a client may hold one token per operation's scope).
    const groups = new Map<string, (typeof tokenRequests)[number][]>();
    for (const request of tokenRequests) {
      const key = requestedScopes(request, authorised).sort().join(' ');
      const group = groups.get(key);
      if (group) group.push(request);
      else groups.set(key, [request]);
    }
    const meanLife = held.reduce((sum, token) => sum + lifeOf(token), 0) / Math.max(1, held.length);
    const perSet = [...groups].map(([key, requests]) => {
      const span = Math.max(meanLife, used[used.length - 1]!.exchange.at - requests[0]!.at);
      return `${key || '(no scope)'}: ${requests.length} over ${seconds(span)} (≈ ${(requests.length / Math.max(1, span / Math.max(1, meanLife))).toFixed(2)} per lifetime)`;
    });
    const figure = `${tokenRequests.length} token request${tokenRequests.length === 1 ? '' : 's'} for ${used.length} API calls, tokens usable ${seconds(meanLife)} on average; by scopes asked — ${perSet.join('; ')}`;
    const evidence = [
      ...offendersFirst(
        early.map((item) => item.request),
        tokenRequests,
      ),
      ...used.slice(0, 3).map((c) => c.exchange),
    ];
    if (early.length === 0)
      return clientPassed(
        `${figure}; no token was requested while a held one had more than half its life left`,
        evidence,
      );
    return clientFailed(
      `${early.length} token request${early.length === 1 ? '' : 's'} while a held token had more than half its life left; ${figure}:\n${early
        .slice(0, 20)
        .map(
          ({ request, by }) =>
            `${line(request)}: ${by.ref} (issued ${seconds(by.issuedAt)}, expires ${seconds(by.issuedAt + lifeOf(by))}) still covered it`,
        )
        .join('\n')}`,
      evidence,
    );
  },
});
