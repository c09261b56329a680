import { clientFailed, clientNotVerified, clientPassed, defineClientCheck } from '../../check.js';
import { line, requestedScopes, seconds } from '../../view.js';

/**
 * Calls with the revoked token that started after its 401 left the stage, tolerated: one (a call that
 * set out while the answer was on its way, or a single retry). Calls that started before are in flight.
 */
export const revokedReuseTolerance = 1;

export default defineClientCheck({
  id: 'client-revocation-recovery',
  title: 'After 401 invalid_token: a new token and at most one retry, no loop',
  category: 'client-token-lifecycle',
  severity: 'should',
  reference: 'RFC 6750 §3.1; API documentation §5.4',
  citation:
    '"invalid_token: The access token provided is expired, revoked, malformed, or invalid for other reasons. … The client MAY request a new access token and retry the protected resource request." (RFC 6750 §3.1)',
  precondition:
    'the revocation scenario fired (a call with the revoked token got 401 invalid_token) and the journey made API calls after it',
  records:
    'the 401, every later call with the revoked token, the token requests until the next success, the first success with a new token',
  fix: 'on 401 with error="invalid_token", drop the cached token, request a new one once and retry the call once; if that fails too, report the error instead of retrying again',
  judge({ session, apiCalls, tokenRequests }) {
    const first = apiCalls.find((call) => call.exchange.injected === 'revoked');
    if (!first)
      return clientNotVerified(
        session.scenarios.find((s) => s.name === 'revocation')?.enabled === false
          ? 'the revocation scenario was not selected'
          : 'the journey made too few API calls for the revocation to fire',
      );
    const revoked = first.token!.ref;
    const scope = first.scope;
    const t0 = first.exchange.end;
    // What the revocation concerns: later calls needing the refused call's scope, and token requests for it.
    const later = apiCalls.filter((call) => call.exchange.at > first.exchange.at && call.scope === scope);
    if (later.length === 0)
      return clientNotVerified(
        `the journey made no call needing ${scope ?? 'that scope'} after the revocation at ${seconds(t0)}`,
        [first.exchange],
      );
    const reused = later.filter((call) => call.token?.ref === revoked && call.exchange.at >= t0);
    // Recovered: a new token was accepted (any answer but 401; a later scenario step such as a 503 counts).
    const recovered = later.find(
      (call) =>
        call.token &&
        call.token.ref !== revoked &&
        call.exchange.status !== 401 &&
        call.exchange.status !== 0,
    );
    const refreshes = tokenRequests.filter(
      (request) =>
        request.at >= first.exchange.at &&
        (!recovered || request.at < recovered.exchange.at) &&
        scope !== undefined &&
        requestedScopes(request, session.stage.authorizedScopes).includes(scope),
    );
    const problems: string[] = [];
    if (reused.length > revokedReuseTolerance)
      problems.push(
        `the revoked token ${revoked} was sent again ${reused.length} times after its 401 (a retry loop):\n${reused
          .slice(0, 10)
          .map((c) => line(c.exchange))
          .join('\n')}`,
      );
    if (!recovered)
      problems.push(
        `no call needing ${scope} was accepted with a new token after the revocation (${later.length} later calls)`,
      );
    if (refreshes.length > 2)
      problems.push(
        `${refreshes.length} token requests for ${scope} between the 401 and the new token's first use (a loop)`,
      );
    const evidence = [
      first.exchange,
      ...reused.map((c) => c.exchange),
      ...refreshes,
      ...(recovered ? [recovered.exchange] : []),
    ];
    if (problems.length > 0) return clientFailed(problems.join('\n'), evidence);
    return clientPassed(
      `${line(first.exchange)} (revoked); then ${refreshes.length} token request${refreshes.length === 1 ? '' : 's'}, ${reused.length} more call${reused.length === 1 ? '' : 's'} with the revoked token, and ${line(recovered!.exchange)} was accepted with a new token`,
      evidence,
    );
  },
});
