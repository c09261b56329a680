import { clientFailed, clientNotVerified, clientPassed, defineClientCheck } from '../../check.js';
import { line, seconds } from '../../view.js';

/** A call that arrives this long after `exp` was sent before it (network and scheduling). */
export const expiryGraceMs = 1000;

export default defineClientCheck({
  id: 'client-no-expired-token',
  title: 'No API call with a token past its expiry',
  category: 'client-token-lifecycle',
  severity: 'must',
  reference: 'API documentation §2.2, §5.4; RFC 6749 §5.1; RFC 7519 §4.1.4',
  citation:
    '"The token is valid for expires_in seconds; after that it is no longer usable. Refreshing a token: obtain a new one through the same request." (Partner Lending API — Authentication and Access §5.4); "the JWT MUST NOT be accepted for processing" on or after exp (RFC 7519 §4.1.4)',
  precondition:
    'the journey made an API call after the first token it used had expired (otherwise it never had to renew one); tokens live --ttl seconds',
  records:
    "every API call with an issued token: its arrival time against the token's exp; the first call after each expiry",
  fix: 'keep the expiry of each token (expires_in from the answer, or the JWT exp) and get a new token before it; never send a token past it',
  judge({ apiCalls }) {
    const withToken = apiCalls.filter((call) => call.token !== undefined);
    if (withToken.length === 0)
      return clientNotVerified('the journey made no API call with a token the stage issued');
    const firstExpiry = Math.min(...withToken.map((call) => call.token!.expAt));
    const last = withToken[withToken.length - 1]!.exchange;
    const after = withToken.filter((call) => call.exchange.at >= firstExpiry);
    if (after.length === 0)
      return clientNotVerified(
        `the journey's last API call (${seconds(last.at)}) came before the first token it used expired (${seconds(firstExpiry)}); run a longer journey or a smaller --ttl`,
        [last],
      );
    const bad = withToken.filter((call) => call.exchange.at > call.token!.expAt + expiryGraceMs);
    const evidence = [...bad.map((call) => call.exchange), ...after.map((call) => call.exchange)];
    if (bad.length === 0)
      return clientPassed(
        `${withToken.length} API calls, ${after.length} of them after the first expiry (${seconds(firstExpiry)}); each carried a token still within its exp (grace ${expiryGraceMs} ms for a call in flight)`,
        evidence,
      );
    return clientFailed(
      `${bad.length} API call${bad.length === 1 ? '' : 's'} carried an expired token:\n${bad
        .slice(0, 20)
        .map((call) => `${line(call.exchange)}: ${call.token!.ref} expired at ${seconds(call.token!.expAt)}`)
        .join('\n')}`,
      evidence,
    );
  },
});
