import { bearerChallengeOf } from '../../../common/bearer-challenge.js';
import { API_CONTROL, defineCheck, judge, notVerified } from '../../check.js';

/** No Authorization header → 401 with a well-formed Bearer challenge. */
export default defineCheck({
  id: 'bearer-missing-header',
  title: 'A request without Authorization gets 401 with a Bearer challenge',
  category: 'bearer-header',
  severity: 'must',
  reference: 'RFC 6750 §3, §3.1; RFC 9110 §11.6.1; API documentation §5.2',
  citation:
    'RFC 6750 §3: "If the protected resource request does not include authentication credentials or does not contain an access token that enables access to the protected resource, the resource server MUST include the HTTP "WWW-Authenticate" response header field"',
  precondition: API_CONTROL,
  records: 'GET loans without Authorization (status, WWW-Authenticate); the positive control',
  fix: 'answer a request without Authorization 401 with WWW-Authenticate: Bearer realm="…" (RFC 6750 §3)',
  async run(context) {
    const control = await context.apiControl();
    if (!control.ok) return notVerified(control.reason);
    const exchange = await context.callApi('listLoans', { authorization: null });
    const problems: string[] = [];
    const notes: string[] = [];
    if (exchange.status !== 401) problems.push(`expected 401, got ${context.describe(exchange)}`);
    const { challenge, problems: syntax } = bearerChallengeOf(exchange.headers);
    problems.push(...syntax.map((problem) => `WWW-Authenticate: ${problem}`));
    // RFC 6750 §3.1: without credentials the server SHOULD NOT include an error code.
    if (challenge?.params.error !== undefined)
      notes.push(
        `note: the challenge carries error="${challenge.params.error}" although no credentials were sent`,
      );
    if (problems.length > 0) problems.push(context.curl(exchange));
    return judge(problems, [...notes, context.describe(exchange)]);
  },
});
