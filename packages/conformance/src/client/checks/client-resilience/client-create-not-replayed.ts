import { clientFailed, clientNotVerified, clientPassed, defineClientCheck } from '../../check.js';
import { line, seconds } from '../../view.js';

export default defineClientCheck({
  id: 'client-create-not-replayed',
  title: 'A create answered 503 is not re-sent automatically',
  category: 'client-resilience',
  severity: 'should',
  reference: 'RFC 9110 §9.2.2, §15.6.4; API documentation §4.2',
  citation:
    '"A user agent SHOULD NOT automatically retry a request with a non-idempotent method unless it has some means to know that the request semantics are actually idempotent" (RFC 9110 §9.2.2); the API documentation defines no idempotency key for the create paths',
  precondition: 'the unavailable scenario fired: a create got 503 (nothing was created)',
  records:
    'the create answered 503 (method, path, SHA-256 of its body) and every later create on the same path with the same body',
  fix: 'do not retry a failed POST by itself: surface the error to the caller (or your own queue) and let business logic decide, since the API has no idempotency key',
  judge({ apiCalls }) {
    const refused = apiCalls.find((call) => call.exchange.injected === 'unavailable');
    if (!refused)
      return clientNotVerified(
        'the journey made no create that would have succeeded, so none was answered 503',
      );
    const { exchange } = refused;
    const replays = apiCalls.filter(
      (call) =>
        call.exchange.seq !== exchange.seq &&
        call.exchange.at > exchange.at &&
        call.key === refused.key &&
        call.exchange.body.sha256 !== undefined &&
        call.exchange.body.sha256 === exchange.body.sha256,
    );
    const after = apiCalls.filter((call) => call.exchange.at > exchange.end);
    const evidence = [
      exchange,
      ...replays.map((c) => c.exchange),
      ...after.slice(0, 5).map((c) => c.exchange),
    ];
    if (replays.length > 0)
      return clientFailed(
        `the create answered 503 was sent again with the same body ${replays.length} time${replays.length === 1 ? '' : 's'}:\n${[
          exchange,
          ...replays.map((c) => c.exchange),
        ]
          .slice(0, 10)
          .map(line)
          .join('\n')}`,
        evidence,
      );
    return clientPassed(
      `${line(exchange)}; no later create on that path carried the same body (${after.length} API calls followed, the session went on for ${seconds(Math.max(0, (after[after.length - 1]?.exchange.at ?? exchange.end) - exchange.end))})`,
      evidence,
    );
  },
});
