import {
  clientFailed,
  clientNotVerified,
  clientPassed,
  defineClientCheck,
  offendersFirst,
} from '../../check.js';
import { line } from '../../view.js';

export default defineClientCheck({
  id: 'client-secret-confined',
  title: 'The client secret goes only to the token endpoint, never to the partner API',
  category: 'client-credentials',
  severity: 'must',
  reference: 'API documentation §1, §5.6; RFC 6749 §2.3.1, §10.1',
  citation:
    '"client_id and client_secret are handled as sensitive secrets." (Partner Lending API — Authentication and Access §5.6); "The parameters can only be transmitted in the request-body and MUST NOT be included in the request URI." (RFC 6749 §2.3.1)',
  precondition:
    'the journey authenticated at the token endpoint with the right secret (so the stage knew what to look for) and made at least one API call',
  records:
    'every API call: whether the client secret appeared in a header (Basic included), the URL or the body',
  fix: 'send client_id and client_secret only to the token endpoint; the partner API takes only the bearer token',
  judge({ apiCalls, tokenRequests }) {
    const authenticated = tokenRequests.filter((exchange) => exchange.form?.secretMatches);
    if (authenticated.length === 0)
      return clientNotVerified(
        'no token request carried the right client secret, so the stage could not tell where else it went',
      );
    if (apiCalls.length === 0)
      return clientNotVerified('the journey made no call to the partner API', authenticated);
    const leaks = new Set(['secret-in-api-header', 'secret-in-api-body', 'secret-in-url']);
    const bad = apiCalls.filter(({ exchange }) => exchange.leaks.some((leak) => leaks.has(leak)));
    const ordered = offendersFirst(bad, apiCalls).map((call) => call.exchange);
    const evidence = [...ordered.slice(0, bad.length), authenticated[0]!, ...ordered.slice(bad.length)];
    if (bad.length === 0)
      return clientPassed(
        `the secret went to the token endpoint (${authenticated.length} request${authenticated.length === 1 ? '' : 's'}) and to none of ${apiCalls.length} API calls`,
        evidence,
      );
    return clientFailed(
      `the client secret reached the partner API in ${bad.length} call${bad.length === 1 ? '' : 's'}:\n${bad
        .slice(0, 20)
        .map(
          ({ exchange }) =>
            `${line(exchange)}: ${exchange.leaks.filter((leak) => leaks.has(leak)).join(', ')}`,
        )
        .join('\n')}`,
      evidence,
    );
  },
});
