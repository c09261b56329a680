import { clientFailed, clientNotVerified, clientPassed, defineClientCheck } from '../../check.js';
import { line, requestedScopes, seconds } from '../../view.js';

/**
 * Calls with the revoked token that started after its 401 left the stage, tolerated: one (a call that
 * set out while the answer was on its way, or a single retry). Calls that started before are in flight.
 */
export const revokedReuseTolerance = 1;

/**
 * Between the 401 and the new token's first success, refusals tolerated before it is a loop: 401s
 * with another token (or none), token requests the token endpoint refused, tokens fetched and never
 * sent. Token requests as such are not counted: a client that renews before every call from several
 * workers asks for several tokens there, each of them used — routine renewal, not a loop.
 */
export const refusalTolerance = 2;

export default defineClientCheck({
  id: 'client-revocation-recovery',
  title: 'After 401 invalid_token: a new token and at most one retry, no loop',
  category: 'client-token-lifecycle',
  severity: 'should',
  reference: 'RFC 6750 §3.1; API documentation §5.4',
  citation:
    '"invalid_token: The access token provided is expired, revoked, malformed, or invalid for other reasons. … The client MAY request a new access token and retry the protected resource request." (RFC 6750 §3.1); "Refreshing a token: obtain a new one through the same request." (Partner Lending API — Authentication and Access §5.4) — a loop is the refused request sent again and again (the revoked token, or refusal after refusal), not the token requests of routine renewal',
  precondition:
    'the revocation scenario fired (a call with the revoked token got 401 invalid_token) and the journey made API calls after it',
  records:
    'the 401, every later call with the revoked token, the refusals until the next success (401s with another token, refused token requests, tokens fetched and never sent), the token requests until then (counted, not judged), the first success with a new token',
  fix: 'on 401 with error="invalid_token", drop the cached token, request a new one once and retry the call once; if that fails too, report the error instead of retrying again',
  judge({ session, apiCalls, tokenRequests, tokens }) {
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
    const until = recovered ? recovered.exchange.at : Number.POSITIVE_INFINITY;
    // Refusals of the episode: calls needing the scope refused with another token (or none)…
    const refusedCalls = later.filter(
      (call) =>
        call.exchange.at >= t0 &&
        call.exchange.at < until &&
        call.exchange.status === 401 &&
        call.token?.ref !== revoked,
    );
    // …token requests the token endpoint refused, and tokens fetched but never sent with any call.
    const sentTokens = new Set(apiCalls.map((call) => call.token?.ref).filter((ref) => ref !== undefined));
    const refusedRequests = refreshes.filter((request) => request.status !== 200 || !request.issued);
    const unused = refreshes.filter(
      (request) =>
        request.issued !== undefined && tokens.has(request.issued) && !sentTokens.has(request.issued),
    );
    const refusals = refusedCalls.length + refusedRequests.length + unused.length;
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
    if (refusals > refusalTolerance)
      problems.push(
        `${refusals} refusals between the 401 and the new token's first use (a loop): ${refusedCalls.length} call${refusedCalls.length === 1 ? '' : 's'} refused 401 with another token, ${refusedRequests.length} token request${refusedRequests.length === 1 ? '' : 's'} refused, ${unused.length} token${unused.length === 1 ? '' : 's'} fetched and never sent:\n${[
          ...refusedCalls.map((c) => c.exchange),
          ...refusedRequests,
          ...unused,
        ]
          .slice(0, 10)
          .map((exchange) => line(exchange))
          .join('\n')}`,
      );
    const evidence = [
      first.exchange,
      ...reused.map((c) => c.exchange),
      ...refusedCalls.map((c) => c.exchange),
      ...refreshes,
      ...(recovered ? [recovered.exchange] : []),
    ];
    if (problems.length > 0) return clientFailed(problems.join('\n'), evidence);
    return clientPassed(
      `${line(first.exchange)} (revoked); then ${refreshes.length} token request${refreshes.length === 1 ? '' : 's'} (${unused.length} never sent, ${refusedRequests.length} refused; renewals of other workers are not a loop), ${refusedCalls.length} call${refusedCalls.length === 1 ? '' : 's'} refused with another token, ${reused.length} more call${reused.length === 1 ? '' : 's'} with the revoked token, and ${line(recovered!.exchange)} was accepted with a new token`,
      evidence,
    );
  },
});
