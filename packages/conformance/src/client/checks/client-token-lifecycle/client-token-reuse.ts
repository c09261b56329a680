import {
  clientFailed,
  clientNotVerified,
  clientPassed,
  defineClientCheck,
  offendersFirst,
} from '../../check.js';
import { maxRenewalWindowSeconds } from '../../stage/scenarios.js';
import { grantableScopes, line, requestedScopes, seconds } from '../../view.js';
import {
  askedAgainWhileHeld,
  clockSlackSeconds,
  lifeOf,
  renewedAheadInShortPhase,
} from '../helpers/held-token.js';

export { lifeOf } from '../helpers/held-token.js';

/** The scopes a request asked for, and, when some are outside the grant, what it could be granted. */
function askedOf(request: Parameters<typeof requestedScopes>[0], authorised: readonly string[]): string {
  const asked = requestedScopes(request, authorised);
  const grantable = grantableScopes(request, authorised);
  return grantable.length === asked.length
    ? asked.join(' ')
    : `${asked.join(' ')}", authorised for "${grantable.join(' ')}`;
}

export default defineClientCheck({
  id: 'client-token-reuse',
  title: 'A token is reused until it nears expiry: no token request while a long-lived one is held',
  category: 'client-token-lifecycle',
  severity: 'should',
  reference: 'API documentation §5.4, §5.5; RFC 6749 §5.1 (expires_in), §3.3',
  citation:
    '"The token is valid for expires_in seconds; after that it is no longer usable. Refreshing a token: obtain a new one through the same request." (Partner Lending API — Authentication and Access §5.4) — a token is used for its lifetime, and renewed after it; "Tokens are limited to the scopes authorised for the partner." (§5.5) — a request is judged against what it could be granted: the scopes asked, narrowed to those authorised',
  precondition:
    'the journey made at least two API calls with long-lived tokens (issued after the short phase), so that reuse could show',
  records: `every token request of the long phase: the scopes asked, narrowed to those the client is authorised for (what the token endpoint grants); the live token covering them the client held, whether a call had shown it works, and the life it had left (more than ${maxRenewalWindowSeconds} s: no renewal window explains the request)`,
  fix: `cache the token and reuse it for every call until shortly before it expires (any renewal window up to ${maxRenewalWindowSeconds} s ahead is fine); do not request a token per call. When the grant is narrower than what you ask, find the cached token by the scopes you asked (or ask only for those granted): a cache keyed by the granted scopes never finds it`,
  judge(view) {
    const { apiCalls, tokenRequests, session } = view;
    const long = apiCalls.filter((call) => call.token?.phase === 'long');
    if (long.length < 2)
      return clientNotVerified(
        `the journey made fewer than two API calls with long-lived tokens (issued after the first ${seconds(session.stage.shortPhaseMs)}); run the journey longer`,
        long.map((call) => call.exchange),
      );
    const needless = askedAgainWhileHeld(view).filter((item) => item.proven);
    const longRequests = tokenRequests.filter((request) => request.at >= session.stage.shortPhaseMs);
    const authorised = session.stage.authorizedScopes;
    // In the short phase a renewal window longer than the token's life renews on every call: allowed,
    // and said, so that the partner knows why its token requests there do not count.
    const shortRequests = tokenRequests.length - longRequests.length;
    const ahead = renewedAheadInShortPhase(view);
    const shortNote =
      shortRequests === 0
        ? ''
        : ahead > 0
          ? `; in the short phase it renewed ${ahead} time${ahead === 1 ? '' : 's'} while its ${session.stage.ttlSeconds}-s token was still valid: it renews ahead by a window longer than those tokens' life, so it asks before every call there — allowed, and not judged for reuse`
          : `; in the short phase it asked ${shortRequests} time${shortRequests === 1 ? '' : 's'}, each after the token it held had expired`;
    const figure = `${longRequests.length} token request${longRequests.length === 1 ? '' : 's'} for ${long.length} API calls with long-lived tokens (${session.stage.longTtlSeconds} s)${shortNote}`;
    const evidence = [
      ...offendersFirst(
        needless.map((item) => item.request),
        longRequests,
      ),
      ...long.slice(0, 3).map((call) => call.exchange),
    ];
    if (needless.length === 0)
      return clientPassed(
        `${figure}; none while a token that had already answered a call had more than ${maxRenewalWindowSeconds + clockSlackSeconds} s left`,
        evidence,
      );
    return clientFailed(
      `${needless.length} token request${needless.length === 1 ? '' : 's'} while the client held a working token for every scope it could be granted with more than ${maxRenewalWindowSeconds + clockSlackSeconds} s left — no renewal window (up to ${maxRenewalWindowSeconds} s, and ${clockSlackSeconds} s for clocks) explains it; ${figure}:\n${needless
        .slice(0, 20)
        .map(
          ({ request, held, leftMs }) =>
            `${line(request)} (asked "${askedOf(request, authorised)}"): ${held.ref} (issued ${seconds(held.issuedAt)}, usable ${seconds(lifeOf(held))}) had ${seconds(leftMs)} left`,
        )
        .join('\n')}`,
      evidence,
    );
  },
});
