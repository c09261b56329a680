import {
  clientFailed,
  clientNotVerified,
  clientPassed,
  defineClientCheck,
  offendersFirst,
} from '../../check.js';
import type { Leak } from '../../session.js';
import { line } from '../../view.js';

const described: Record<Leak, string> = {
  'token-in-url': 'an access token in the URL',
  'secret-in-url': 'the client secret in the URL',
  'client-id-in-url': 'the client id in the URL',
  'token-in-body': 'an access token in the body of an API call',
  'secret-in-api-header': '',
  'secret-in-api-body': '',
};
const judged = new Set<Leak>(['token-in-url', 'secret-in-url', 'client-id-in-url', 'token-in-body']);

export default defineClientCheck({
  id: 'client-token-not-in-url',
  title: 'No token or client credential in any URL, no token in a request body',
  category: 'client-credentials',
  severity: 'must',
  reference: 'RFC 6749 §2.3.1; RFC 6750 §2.2, §2.3, §5.3; API documentation §4.2, §5.6',
  citation:
    '"The parameters can only be transmitted in the request-body and MUST NOT be included in the request URI." (RFC 6749 §2.3.1, of client_id and client_secret); "Every call carries the header Authorization: Bearer <ACCESS_TOKEN>." (Partner Lending API — Authentication and Access §4.2)',
  precondition: 'the journey sent at least one request to the token endpoint or the API',
  records:
    'every request: where (if anywhere) an issued token, the client secret or the client id appeared in its target or, for API calls, its body',
  fix: 'send the token only in the Authorization header and the client credentials only in the token request body (or HTTP Basic); never build them into a URL, which ends up in logs and browser history',
  judge({ session }) {
    const all = session.exchanges;
    if (all.length === 0) return clientNotVerified('the journey sent no request to the stage');
    const bad = all.filter((exchange) => exchange.leaks.some((leak) => judged.has(leak)));
    const evidence = offendersFirst(bad, all);
    if (bad.length === 0)
      return clientPassed(
        `none of ${all.length} requests carried a token or client credential in its URL, nor a token in an API body`,
        evidence,
      );
    const why = bad.map(
      (exchange) =>
        `${line(exchange)}: ${exchange.leaks
          .filter((leak) => judged.has(leak))
          .map((leak) => described[leak])
          .join(', ')}`,
    );
    return clientFailed(
      `${bad.length} request${bad.length === 1 ? '' : 's'} exposed a credential:\n${why.slice(0, 20).join('\n')}`,
      evidence,
    );
  },
});
