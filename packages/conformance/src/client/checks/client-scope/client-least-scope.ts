import {
  clientFailed,
  clientNotVerified,
  clientPassed,
  defineClientCheck,
  offendersFirst,
} from '../../check.js';
import { line, requestedScopes } from '../../view.js';

export default defineClientCheck({
  id: 'client-least-scope',
  title: 'Tokens carry only the scopes of the operations the journey called',
  category: 'client-scope',
  severity: 'should',
  reference: 'API documentation §2.1, §5.5; RFC 6749 §3.3; RFC 9700 §2.3',
  citation:
    '"Each endpoint of 4.2 requires the scope listed for it. Tokens are limited to the scopes authorised for the partner." (Partner Lending API — Authentication and Access §5.5); "The privileges associated with an access token SHOULD be restricted to the minimum required for the particular application or use case." (RFC 9700 §2.3)',
  precondition: 'the journey obtained at least one token and called at least one operation of the API',
  records:
    'every token request: the scopes asked (all authorised when scope is absent) and granted, against the scopes of the operations called',
  fix: 'ask, in each token request, only for the scopes of the operations you are about to call (scope=read:loans for listing loans)',
  judge({ apiCalls, tokenRequests, tokens, session }) {
    const needed = new Set(
      apiCalls.map((call) => call.scope).filter((scope): scope is string => scope !== undefined),
    );
    const granted = tokenRequests.filter((exchange) => exchange.issued !== undefined);
    if (granted.length === 0) return clientNotVerified('the journey obtained no token');
    if (needed.size === 0) return clientNotVerified('the journey called no operation of the API', granted);
    const authorised = session.stage.authorizedScopes;
    const bad = granted
      .map((exchange) => {
        const token = tokens.get(exchange.issued!);
        const asked = requestedScopes(exchange, authorised);
        const extra = asked.filter((scope) => token?.scope.includes(scope) && !needed.has(scope));
        return { exchange, extra, implicit: exchange.form?.scope === undefined };
      })
      .filter((item) => item.extra.length > 0);
    const evidence = offendersFirst(
      bad.map((item) => item.exchange),
      granted,
    );
    const calledText = [...needed].join(' ');
    if (bad.length === 0)
      return clientPassed(`every token was granted only scopes the journey used (${calledText})`, evidence);
    return clientFailed(
      `${bad.length} token${bad.length === 1 ? '' : 's'} carried scopes no call needed (the calls needed ${calledText}):\n${bad
        .slice(0, 10)
        .map(
          (item) =>
            `${line(item.exchange)}: ${item.extra.join(' ')}${item.implicit ? ' (no scope parameter: every authorised scope was granted)' : ''}`,
        )
        .join('\n')}`,
      evidence,
    );
  },
});
