import { defineCheck, judge, notVerified } from '../../check.js';
import { errorCodeOf, jsonObject } from '../../http/probe.js';

/** A token request without client credentials is refused: 400 invalid_request or 401 invalid_client. */
export default defineCheck({
  id: 'token-missing-credentials',
  title: 'A token request without client credentials is refused',
  category: 'token-endpoint',
  severity: 'must',
  reference: 'RFC 6749 §2.3, §5.2; API documentation §4.1',
  citation: 'RFC 6749 §4.4.2: "The authorization server MUST authenticate the client."',
  precondition:
    'the same token request with the right credentials gets a token in this run (positive control of the token endpoint)',
  records: 'the request without credentials and its answer; the positive-control token request',
  fix: 'refuse a token request without client_id/client_secret (or HTTP Basic) with 400 invalid_request or 401 invalid_client; never fall back to a default client',
  async run(context) {
    const control = await context.tokenControl();
    if (!control.ok) return notVerified(control.reason);
    const form = context
      .tokenForm({ scopes: context.authorised })
      .filter(([name]) => !name.startsWith('client_'));
    const exchange = await context.postToken(form);
    const error = errorCodeOf(exchange);
    const accepted =
      (exchange.status === 400 && error === 'invalid_request') ||
      ((exchange.status === 400 || exchange.status === 401) && error === 'invalid_client');
    const problems: string[] = [];
    if (typeof jsonObject(exchange)?.access_token === 'string')
      problems.push('a token was issued without credentials');
    if (!accepted)
      problems.push(
        `expected 400 invalid_request or 401 invalid_client, got ${context.describe(exchange)}`,
        context.curl(exchange),
      );
    return judge(problems, [`refused with ${context.describe(exchange)}`]);
  },
});
