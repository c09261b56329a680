import { clientFailed, clientNotVerified, clientPassed, defineClientCheck } from '../../check.js';
import type { IssuedToken, RecordedExchange } from '../../session.js';
import { type ApiCall, line, requestedScopes, seconds } from '../../view.js';

/**
 * Calls of one operation with tokens lacking its scope, tolerated: one. RFC 6749 §3.3 and §5.1 tell the
 * client its grant up front (the token answer's `scope`, required whenever it differs from the request),
 * but RFC 6750 §3.1 gives it a second, legitimate way to learn it: a 403 `insufficient_scope` naming the
 * scope needed. A client that learns from that one answer and then asks for a token with the scope is
 * correct; a second call of the operation with a token lacking its scope is a client that does not read
 * its grant at all.
 */
export const outsideGrantTolerance = 1;

/** A token request granted fewer scopes than it asked: the token it got (none when refused), and what it lacked. */
interface Narrowing {
  exchange: RecordedExchange;
  token: IssuedToken | undefined;
  wanted: string[];
}

/** Whether `token` could still be used at `at`: issued, not expired, not revoked. */
const usableAt = (token: IssuedToken, at: number) =>
  token.issuedAt <= at && at < token.expAt && (token.revokedAt === undefined || at < token.revokedAt);

export default defineClientCheck({
  id: 'client-granted-scope-respected',
  title:
    'After a narrower grant, the client calls an operation outside a token’s grant only with a token that has its scope',
  category: 'client-scope',
  severity: 'should',
  reference: 'API documentation §4.1 rules 1–2, §5.5; RFC 6749 §3.3, §5.1; RFC 6750 §3.1',
  citation: `"When a requested scope is not authorised for the partner, that scope is absent from the returned scope field." (Partner Lending API — Authentication and Access §4.1 rule 2); "If the issued access token scope is different from the one requested by the client, the authorization server MUST include the "scope" response parameter to inform the client of the actual scope granted." (RFC 6749 §3.3); "insufficient_scope: The request requires higher privileges than provided by the access token." (RFC 6750 §3.1) — the grant is known before the call; ${outsideGrantTolerance} call of an operation with a token lacking its scope is tolerated (the 403 insufficient_scope is the protocol's other way to learn it), a second is not`,
  precondition:
    'the grant was narrower than asked (a token lacked an asked scope, or the request was refused invalid_scope), and while a token lacking a scope was usable the journey needed an operation needing it — shown by calling it, with a new token that had the scope (a pass) or with the token that lacked it (a failure); when the client can never be granted that scope, by not calling it at all',
  records:
    'the narrowed token requests, every call of an operation with a token lacking its scope, and the calls that show respect (an operation outside the narrowed grant called with a new token while the narrowed one was usable)',
  fix: 'read the scope field of every token answer; when it lacks the scope an operation needs, do not call the operation with that token — ask for a new token with that scope (or, when your client is not authorised for it, ask for it in the partner console)',
  judge({ session, apiCalls, tokenRequests, tokens }) {
    const authorised = session.stage.authorizedScopes;
    // Narrower than asked: a token without an asked scope, or the ask refused invalid_scope (RFC 6749 §5.2).
    const narrowings = tokenRequests.flatMap((exchange): Narrowing[] => {
      const asked = requestedScopes(exchange, authorised);
      if (exchange.status === 400 && exchange.error === 'invalid_scope')
        return [{ exchange, token: undefined, wanted: asked }];
      const token = exchange.issued ? tokens.get(exchange.issued) : undefined;
      const wanted = token ? asked.filter((scope) => !token.scope.includes(scope)) : [];
      return token && wanted.length > 0 ? [{ exchange, token, wanted }] : [];
    });
    // Every call of an operation with a token lacking its scope, by operation.
    const outside = apiCalls.filter(
      (call) =>
        call.scope !== undefined && call.token !== undefined && !call.token.scope.includes(call.scope),
    );
    const byOperation = new Map<string, ApiCall[]>();
    for (const call of outside) byOperation.set(call.key, [...(byOperation.get(call.key) ?? []), call]);
    const evidence: RecordedExchange[] = narrowings.slice(0, 2).map((item) => item.exchange);
    const problems: string[] = [];
    for (const [key, calls] of byOperation) {
      evidence.push(...calls.slice(0, 10).map((c) => c.exchange));
      if (calls.length > outsideGrantTolerance)
        problems.push(
          `${key} was called ${calls.length} times with a token lacking its scope ${calls[0]!.scope} (${outsideGrantTolerance} tolerated: the one a 403 insufficient_scope answers):\n${calls
            .slice(0, 10)
            .map(
              (c) => `${line(c.exchange)} with ${c.token!.ref} (${c.token!.scope.join(' ') || 'no scope'})`,
            )
            .join('\n')}`,
        );
    }
    if (problems.length > 0) return clientFailed(problems.join('\n'), evidence);
    if (narrowings.length === 0)
      return clientNotVerified(
        outside.length > 0
          ? `the grant was never narrower than asked; ${outside.length} call${outside.length === 1 ? '' : 's'} with a token lacking its scope (within the tolerance): ${line(outside[0]!.exchange)}`
          : 'the grant was never narrower than asked (no token lacked an asked scope, no token request was refused invalid_scope)',
        outside.map((c) => c.exchange),
      );
    const [first] = narrowings;
    const what = (item: Narrowing) =>
      `${line(item.exchange)}: asked "${requestedScopes(item.exchange, authorised).join(' ')}", ${item.token ? `granted "${item.token.scope.join(' ')}" (${item.token.ref})` : `refused ${item.exchange.error}`}`;
    // Respect shown: a call needing a scope the narrowing withheld, made with a token issued after it that
    // has the scope, while the narrowed token (or, after a refusal, a token lacking the scope) was usable —
    // the moment a client ignoring its grant would have used the token it held.
    for (const narrowing of narrowings) {
      const shown = apiCalls.find((call) => {
        if (call.scope === undefined || !call.token || !call.token.scope.includes(call.scope)) return false;
        if (call.token.seq <= narrowing.exchange.seq || call.exchange.status === 403) return false;
        if (narrowing.token)
          return !narrowing.token.scope.includes(call.scope) && usableAt(narrowing.token, call.exchange.at);
        return (
          narrowing.wanted.includes(call.scope) &&
          [...tokens.values()].some(
            (held) =>
              held.ref !== call.token!.ref &&
              !held.scope.includes(call.scope!) &&
              usableAt(held, call.exchange.at),
          )
        );
      });
      if (shown) {
        const tolerated =
          outside.length > 0 ? `; ${outside.length} call tolerated: ${line(outside[0]!.exchange)}` : '';
        return clientPassed(
          `${what(narrowing)}; then ${line(shown.exchange)} (${shown.operationId}, needing ${shown.scope}) was called with the new token ${shown.token!.ref} (${shown.token!.scope.join(' ')})${narrowing.token ? ` while ${narrowing.token.ref} was still usable` : ' while a token lacking that scope was usable'}${tolerated}`,
          [narrowing.exchange, shown.exchange, ...outside.map((c) => c.exchange)],
        );
      }
    }
    // A scope the client is not authorised for is never granted: respect is not calling its operation.
    const never = narrowings.filter((item) => item.wanted.some((scope) => !authorised.includes(scope)));
    if (never.length > 0 && outside.length === 0) {
      const item = never[0]!;
      const later = apiCalls.filter((call) => call.exchange.at > item.exchange.end).length;
      if (later > 0)
        return clientPassed(
          `${what(item)}: the client is not authorised for ${item.wanted.filter((scope) => !authorised.includes(scope)).join(' ')}, and no operation needing it was called (${later} API calls after)`,
          [item.exchange],
        );
    }
    const held = first!.token;
    return clientNotVerified(
      `${what(first!)}; but ${held ? `while ${held.ref} was usable (until ${seconds(Math.min(held.expAt, held.revokedAt ?? Number.POSITIVE_INFINITY))})` : 'after that'} the journey called no operation needing ${first!.wanted.join(' or ')} with a new token${outside.length > 0 ? ` (${outside.length} call with a token lacking its scope, within the tolerance)` : ''}: whether it reads the granted scope was not shown`,
      [first!.exchange, ...outside.map((c) => c.exchange)],
    );
  },
});
