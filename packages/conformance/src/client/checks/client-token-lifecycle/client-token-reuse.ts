import {
  clientFailed,
  clientNotVerified,
  clientPassed,
  defineClientCheck,
  offendersFirst,
} from '../../check.js';
import { maxRenewalWindowSeconds } from '../../stage/scenarios.js';
import { line, requestedScopes, seconds } from '../../view.js';
import {
  askedAgainWhileHeld,
  clockSlackSeconds,
  lifeOf,
  renewedAheadInShortPhase,
} from '../helpers/held-token.js';

export { lifeOf } from '../helpers/held-token.js';

export default defineClientCheck({
  id: 'client-token-reuse',
  title: 'A token is reused until it nears expiry: no token request while a long-lived one is held',
  category: 'client-token-lifecycle',
  severity: 'should',
  reference: 'API documentation §5.4; RFC 6749 §5.1 (expires_in)',
  citation:
    '"The token is valid for expires_in seconds; after that it is no longer usable. Refreshing a token: obtain a new one through the same request." (Partner Lending API — Authentication and Access §5.4) — a token is used for its lifetime, and renewed after it',
  precondition:
    'the journey made at least two API calls with long-lived tokens (issued after the short phase), so that reuse could show',
  records: `every token request of the long phase: the live token covering the same scopes the client held, whether a call had shown it works, and the life it had left (more than ${maxRenewalWindowSeconds} s: no renewal window explains the request)`,
  fix: `cache the token and reuse it for every call until shortly before it expires (any renewal window up to ${maxRenewalWindowSeconds} s ahead is fine); do not request a token per call`,
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
      `${needless.length} token request${needless.length === 1 ? '' : 's'} while the client held a working token for the same scopes with more than ${maxRenewalWindowSeconds + clockSlackSeconds} s left — no renewal window (up to ${maxRenewalWindowSeconds} s, and ${clockSlackSeconds} s for clocks) explains it; ${figure}:\n${needless
        .slice(0, 20)
        .map(
          ({ request, held, leftMs }) =>
            `${line(request)} (asked "${requestedScopes(request, authorised).join(' ')}"): ${held.ref} (issued ${seconds(held.issuedAt)}, usable ${seconds(lifeOf(held))}) had ${seconds(leftMs)} left`,
        )
        .join('\n')}`,
      evidence,
    );
  },
});
