import { clientFailed, clientNotVerified, clientPassed, defineClientCheck } from '../../check.js';
import type { RecordedExchange } from '../../session.js';
import { line, requestedScopes } from '../../view.js';
import { askedAgainWhileHeld } from '../helpers/held-token.js';

export default defineClientCheck({
  id: 'client-single-flight',
  title: 'Concurrent calls share one token request (no stampede, no serialised herd)',
  category: 'client-token-lifecycle',
  severity: 'should',
  reference: 'API documentation §5.1, §5.4; RFC 6749 §5.1',
  citation:
    '"A partner requests a token from the token endpoint (4.1) using its client credentials." and "Refreshing a token: obtain a new one through the same request." (Partner Lending API — Authentication and Access §5.1, §5.4) — one token serves every call while it is valid',
  precondition: 'the journey made API calls concurrently (two in flight at once) at least once',
  records:
    'token requests for the same scopes in flight at the same time; long-phase token requests made right after a token for the same scopes arrived, before any call had used it (callers queued behind a lock, each fetching its own); the concurrent API calls',
  fix: 'let concurrent callers share the one token request in flight, and let a caller that waited for it use the token it brought instead of asking again — at start and at every renewal',
  judge(view) {
    const { apiCalls, tokenRequests, session } = view;
    const calls = apiCalls.map((call) => call.exchange);
    const concurrent: RecordedExchange[] = [];
    for (let i = 1; i < calls.length && concurrent.length < 6; i += 1)
      if (calls[i]!.at < calls[i - 1]!.end) concurrent.push(calls[i - 1]!, calls[i]!);
    if (concurrent.length === 0)
      return clientNotVerified('the journey never had two API calls in flight at once');
    const authorised = session.stage.authorizedScopes;
    // Requests in arrival order; per scope set, the one in flight that ends last: O(n).
    const open = new Map<string, RecordedExchange>();
    const stampede: Array<[RecordedExchange, RecordedExchange]> = [];
    for (const request of tokenRequests) {
      const key = requestedScopes(request, authorised).sort().join(' ');
      const previous = open.get(key);
      if (previous && request.at < previous.end) stampede.push([previous, request]);
      if (!previous || request.end > previous.end) open.set(key, request);
    }
    const herd = askedAgainWhileHeld(view).filter((item) => !item.proven);
    const evidence = [
      ...stampede.flat(),
      ...herd.flatMap((item) => [item.request]),
      ...concurrent,
      ...tokenRequests,
    ];
    if (stampede.length === 0 && herd.length === 0)
      return clientPassed(
        `API calls ran concurrently; no two of the ${tokenRequests.length} token requests for the same scopes were in flight at once, and none asked again for a token that had just arrived`,
        evidence,
      );
    const lines = [
      ...stampede.slice(0, 10).map(([a, b]) => `in flight together: ${line(a)} and ${line(b)}`),
      ...herd
        .slice(0, 10)
        .map(
          (item) =>
            `asked again before using the token just received: ${line(item.request)} while ${item.held.ref} (issued at ${(item.held.issuedAt / 1000).toFixed(2)} s) had answered no call yet`,
        ),
    ];
    return clientFailed(
      `${stampede.length} pair${stampede.length === 1 ? '' : 's'} of token requests for the same scopes were in flight at once, and ${herd.length} request${herd.length === 1 ? '' : 's'} asked again for a token that had just arrived (callers queued one after another, each fetching its own):\n${lines.join('\n')}`,
      evidence,
    );
  },
});
