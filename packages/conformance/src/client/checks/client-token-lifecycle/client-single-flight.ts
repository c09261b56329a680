import { clientFailed, clientNotVerified, clientPassed, defineClientCheck } from '../../check.js';
import type { RecordedExchange } from '../../session.js';
import { line, requestedScopes } from '../../view.js';

const overlap = (a: RecordedExchange, b: RecordedExchange) => a.at < b.end && b.at < a.end;

export default defineClientCheck({
  id: 'client-single-flight',
  title: 'Concurrent calls share one token request (no stampede at start or at expiry)',
  category: 'client-token-lifecycle',
  severity: 'should',
  reference: 'API documentation §5.1, §5.4; RFC 6749 §5.1',
  citation:
    '"A partner requests a token from the token endpoint (4.1) using its client credentials." and "Refreshing a token: obtain a new one through the same request." (Partner Lending API — Authentication and Access §5.1, §5.4) — one token serves every call while it is valid',
  precondition: 'the journey made API calls concurrently (two in flight at once) at least once',
  records: 'token requests in flight at the same time asking for the same scopes; the concurrent API calls',
  fix: 'let concurrent callers wait for the one token request in flight (a shared promise), at start and when the token is renewed',
  judge({ apiCalls, tokenRequests, session }) {
    const calls = apiCalls.map((call) => call.exchange);
    const concurrent: RecordedExchange[] = [];
    for (let i = 1; i < calls.length && concurrent.length < 6; i += 1)
      if (overlap(calls[i - 1]!, calls[i]!)) concurrent.push(calls[i - 1]!, calls[i]!);
    if (concurrent.length === 0)
      return clientNotVerified('the journey never had two API calls in flight at once');
    const authorised = session.stage.authorizedScopes;
    const key = (exchange: RecordedExchange) => requestedScopes(exchange, authorised).sort().join(' ');
    const stampede: Array<[RecordedExchange, RecordedExchange]> = [];
    for (let i = 0; i < tokenRequests.length; i += 1)
      for (let j = i + 1; j < tokenRequests.length && tokenRequests[j]!.at < tokenRequests[i]!.end; j += 1)
        if (key(tokenRequests[i]!) === key(tokenRequests[j]!))
          stampede.push([tokenRequests[i]!, tokenRequests[j]!]);
    const evidence = [...stampede.flat(), ...concurrent, ...tokenRequests];
    if (stampede.length === 0)
      return clientPassed(
        `API calls ran concurrently; no two of the ${tokenRequests.length} token requests for the same scopes were in flight at once`,
        evidence,
      );
    return clientFailed(
      `${stampede.length} pair${stampede.length === 1 ? '' : 's'} of token requests for the same scopes were in flight at once:\n${stampede
        .slice(0, 10)
        .map(([a, b]) => `${line(a)} and ${line(b)}`)
        .join('\n')}`,
      evidence,
    );
  },
});
