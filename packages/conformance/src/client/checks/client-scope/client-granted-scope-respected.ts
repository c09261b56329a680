import { clientFailed, clientNotVerified, clientPassed, defineClientCheck } from '../../check.js';
import type { RecordedExchange } from '../../session.js';
import { line } from '../../view.js';

const insufficient = (exchange: RecordedExchange) =>
  exchange.status === 403 &&
  /insufficient_scope/.test(`${exchange.responseHeaders['www-authenticate'] ?? ''} ${exchange.error ?? ''}`);

export default defineClientCheck({
  id: 'client-granted-scope-respected',
  title: 'After a narrower grant, the client does not keep calling an operation it was not granted',
  category: 'client-scope',
  severity: 'should',
  reference: 'API documentation §4.1 rules 1–2, §5.5; RFC 6749 §3.3, §5.1; RFC 6750 §3.1',
  citation:
    '"When a requested scope is not authorised for the partner, that scope is absent from the returned scope field." (Partner Lending API — Authentication and Access §4.1 rule 2); "insufficient_scope: The request requires higher privileges than provided by the access token." (RFC 6750 §3.1) — calling again with the same grant cannot succeed',
  precondition:
    'the grant was narrower than asked at least once (a token request asked for a scope the token lacks, or was refused invalid_scope), or a call was answered 403 insufficient_scope',
  records:
    'token requests whose grant lacked an asked scope, 403 insufficient_scope answers, and later calls of that operation with tokens lacking its scope',
  fix: 'compare the scope field of the token answer with what you asked for; do not call an operation whose scope was not granted (ask for it in the partner console instead)',
  judge({ apiCalls, tokenRequests, tokens }) {
    // Narrower than asked: a token without an asked scope, or the ask refused invalid_scope (RFC 6749 §5.2).
    const narrowed = tokenRequests.filter((exchange) => {
      if (exchange.status === 400 && exchange.error === 'invalid_scope') return true;
      const token = exchange.issued ? tokens.get(exchange.issued) : undefined;
      const asked = (exchange.form?.scope ?? '').split(' ').filter(Boolean);
      return token !== undefined && asked.some((scope) => !token.scope.includes(scope));
    });
    const refusals = apiCalls.filter((call) => insufficient(call.exchange));
    if (narrowed.length === 0 && refusals.length === 0)
      return clientNotVerified(
        'the grant was never narrower than asked and no call was answered 403 insufficient_scope',
      );
    const problems: string[] = [];
    const evidence: RecordedExchange[] = [
      ...narrowed.slice(0, 2),
      ...refusals.slice(0, 2).map((c) => c.exchange),
    ];
    const byOperation = new Map<string, typeof refusals>();
    for (const refusal of refusals)
      if (!byOperation.has(refusal.key)) byOperation.set(refusal.key, [refusal]);
    for (const [key, [first]] of byOperation) {
      const again = apiCalls.filter(
        (call) =>
          call.key === key &&
          call.exchange.at > first!.exchange.end &&
          call.scope !== undefined &&
          (call.token === undefined || !call.token.scope.includes(call.scope)),
      );
      evidence.push(...again.map((c) => c.exchange));
      // One retry (for example after asking for the scope again) is tolerated; more is a client that keeps calling.
      if (again.length > 1)
        problems.push(
          `${line(first!.exchange)} was refused insufficient_scope, and ${key} was called ${again.length} more times with tokens lacking its scope:\n${again
            .slice(0, 10)
            .map((c) => line(c.exchange))
            .join('\n')}`,
        );
    }
    if (problems.length > 0) return clientFailed(problems.join('\n'), evidence);
    const text = [
      narrowed.length > 0 &&
        `${narrowed.length} token request${narrowed.length === 1 ? '' : 's'} got fewer scopes than asked (e.g. ${line(narrowed[0]!)}: asked "${narrowed[0]!.form?.scope}", ${narrowed[0]!.issued ? `granted "${tokens.get(narrowed[0]!.issued)?.scope.join(' ')}"` : `refused ${narrowed[0]!.error}`})`,
      refusals.length > 0 &&
        `${refusals.length} call${refusals.length === 1 ? '' : 's'} answered 403 insufficient_scope, none repeated more than once`,
      `no operation outside the grant was called again and again (${apiCalls.length} API calls)`,
    ]
      .filter(Boolean)
      .join('; ');
    return clientPassed(text, evidence);
  },
});
