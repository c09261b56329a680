import { clientFailed, clientNotVerified, clientPassed, defineClientCheck } from '../../check.js';
import { firstAtOrAfter, line, seconds } from '../../view.js';

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
    "the journey made an API call after the first token it used had expired (otherwise it never had to renew one); the short phase's tokens live --ttl seconds",
  records:
    "every API call with an issued token: its arrival time against the token's exp; the first call after each expiry, and whether the token request came only after that call was refused (reactive renewal)",
  fix: 'keep the expiry of each token (expires_in from the answer, or the JWT exp) and get a new token before it; never send a token past it, nor wait for the API to refuse it',
  judge({ apiCalls, tokenRequests, session }) {
    const withToken = apiCalls.filter((call) => call.token !== undefined);
    if (withToken.length === 0)
      return clientNotVerified('the journey made no API call with a token the stage issued');
    const firstExpiry = Math.min(...withToken.map((call) => call.token!.expAt));
    const last = withToken[withToken.length - 1]!.exchange;
    const after = withToken.filter((call) => call.exchange.at >= firstExpiry);
    // A journey that started after the short phase (a slow start: a loaded machine, a JVM compiling its
    // source, a container pulled) used long-lived tokens only: say so, not "run a longer journey".
    const firstRequest = tokenRequests[0];
    if (after.length === 0 && withToken.every((call) => call.token!.phase === 'long') && firstRequest)
      return clientNotVerified(
        `the journey's first token request (${seconds(firstRequest.at)}) came after the short phase (the first ${seconds(session.stage.shortPhaseMs)}, tokens of ${session.stage.ttlSeconds} s) had ended, so every token it used lives ${session.stage.longTtlSeconds} s and none expired while in use; start the journey sooner after the stage is up (its start-up took longer than the short phase), or give a longer --ttl`,
        [firstRequest, last],
      );
    if (after.length === 0)
      return clientNotVerified(
        `the journey's last API call (${seconds(last.at)}) came before the first token it used expired (${seconds(firstExpiry)}); run a longer journey or a smaller --ttl`,
        [last],
      );
    const bad = withToken.filter((call) => call.exchange.at > call.token!.expAt + expiryGraceMs);
    // Reactive renewal: the token is kept until the API refuses it. Its first late call lands inside the
    // in-flight grace when calls are frequent — but it lands there at every expiry, and the token request
    // comes only after the refusal. A client that renews ahead (by any window, 0 included) is late at
    // most by a race, now and then.
    // Each token's late call answered first: with several workers, the renewal follows whichever
    // refusal came back first, not the late call that arrived first.
    const lateByToken = new Map<string, (typeof withToken)[number]>();
    for (const call of withToken) {
      if (call.exchange.at <= call.token!.expAt) continue;
      const seen = lateByToken.get(call.token!.ref);
      if (!seen || call.exchange.end < seen.exchange.end) lateByToken.set(call.token!.ref, call);
    }
    // A token expired while in use when an operation it carried was called again after its expiry (a
    // token used once, for a create made once, is not in use when it expires).
    const operationOf = (call: (typeof withToken)[number]) =>
      call.operationId ?? `${call.exchange.method} ${call.exchange.target.split('?')[0]}`;
    const operationsOf = new Map<string, Set<string>>();
    for (const call of withToken) {
      const carried = operationsOf.get(call.token!.ref) ?? new Set<string>();
      carried.add(operationOf(call));
      operationsOf.set(call.token!.ref, carried);
    }
    const expiredInUse = new Set(
      [...operationsOf].flatMap(([ref, carried]) => {
        const expAt = withToken.find((call) => call.token!.ref === ref)!.token!.expAt;
        return withToken.some((call) => call.exchange.at > expAt && carried.has(operationOf(call)))
          ? [ref]
          : [];
      }),
    );
    const renewedAfterRefusal = [...lateByToken.values()].filter((call) => {
      const next = tokenRequests[firstAtOrAfter(tokenRequests, call.exchange.end)];
      return next !== undefined && next.at <= call.exchange.end + expiryGraceMs * 2;
    });
    const reactive = renewedAfterRefusal.length >= 2 && renewedAfterRefusal.length * 2 >= expiredInUse.size;
    const evidence = [
      ...bad.map((call) => call.exchange),
      ...renewedAfterRefusal.map((call) => call.exchange),
      ...after.map((call) => call.exchange),
    ];
    if (bad.length === 0 && !reactive)
      return clientPassed(
        `${withToken.length} API calls, ${after.length} of them after the first expiry (${seconds(firstExpiry)}); each carried a token still within its exp (grace ${expiryGraceMs} ms for a call in flight), and ${renewedAfterRefusal.length} of the ${expiredInUse.size} tokens that expired while in use were renewed only after a refusal`,
        evidence,
      );
    const problems = [
      ...(bad.length > 0
        ? [
            `${bad.length} API call${bad.length === 1 ? '' : 's'} carried an expired token:`,
            ...bad
              .slice(0, 20)
              .map(
                (call) =>
                  `${line(call.exchange)}: ${call.token!.ref} expired at ${seconds(call.token!.expAt)}`,
              ),
          ]
        : []),
      ...(reactive
        ? [
            `${renewedAfterRefusal.length} of the ${expiredInUse.size} tokens that expired while in use were sent after their expiry and renewed only once the API refused them (reactive renewal: expires_in is not honoured):`,
            ...renewedAfterRefusal
              .slice(0, 10)
              .map(
                (call) =>
                  `${line(call.exchange)}: ${call.token!.ref} expired at ${seconds(call.token!.expAt)}`,
              ),
          ]
        : []),
    ];
    return clientFailed(problems.join('\n'), evidence);
  },
});
