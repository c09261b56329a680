import { API_CONTROL, defineCheck, judge, notVerified } from '../../check.js';
import { isSuccess } from '../../context.js';

/**
 * A token in the `access_token` query parameter is not honoured. RFC 6750 §2.3 lets a resource server
 * support it (MAY) but says it SHOULD NOT be used, and RFC 9700 forbids clients to send it: a token in a
 * URL lands in logs and histories. Hence `should`, reported loudly.
 */
export default defineCheck({
  id: 'bearer-query-token',
  title: 'A token in the query string is not honoured',
  category: 'bearer-header',
  severity: 'should',
  reference: 'API documentation §4.2, §5.2; RFC 6750 §2.3, §5.3',
  citation:
    'RFC 6750 §2.3: "Because of the security weaknesses associated with the URI method …, it SHOULD NOT be used unless it is impossible to transport the access token in the "Authorization" request header field or the HTTP request entity-body. Resource servers MAY support this method."; RFC 9700 §4.3.2: clients "MUST NOT pass access tokens in a URI query parameter"',
  precondition: API_CONTROL,
  records: 'GET loans with ?access_token= and no header; the positive control',
  fix: 'ignore access_token in the query string (take the token from the Authorization header only)',
  async run(context) {
    const control = await context.apiControl();
    if (!control.ok) return notVerified(control.reason);
    const exchange = await context.callApi('listLoans', {
      authorization: null,
      query: { access_token: context.main.accessToken! },
    });
    // Judged on the one fact the check names: a query token honoured (2xx). Any other answer did not
    // honour it; a server error is evidence for spec-no-server-errors, not a second failure here.
    const problems = isSuccess(exchange)
      ? [
          `WARNING: the API honours an access token in the URL query string (${context.describe(exchange)}): tokens in URLs end up in access logs, proxies and browser histories (RFC 6750 §2.3 "SHOULD NOT be used", RFC 9700 §4.3.2). Expected 401 (no header, the query token ignored)`,
          context.curl(exchange),
        ]
      : [];
    const how =
      exchange.status >= 500 ? 'not honoured (a server error, judged by spec-no-server-errors)' : 'refused';
    return judge(problems, [`${how}: ${context.describe(exchange)}`]);
  },
});
