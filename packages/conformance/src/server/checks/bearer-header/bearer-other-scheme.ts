import { API_CONTROL, defineCheck, judge, notVerified } from '../../check.js';
import { isSuccess } from '../../context.js';

const schemes = ['Token', 'Basic', 'JWT', 'MAC', 'Bearer2'];

/** A valid token under any other scheme name is not a bearer credential: 401. */
export default defineCheck({
  id: 'bearer-other-scheme',
  title: 'A valid token under another auth scheme is refused',
  category: 'bearer-header',
  severity: 'should',
  reference: 'RFC 6750 §2.1, §3; RFC 9110 §11.6.2; API documentation §5.2',
  citation:
    'Partner Lending API — Authentication and Access §4.2: "Every call carries the header Authorization: Bearer <ACCESS_TOKEN>." (no RFC requires refusing other schemes: should)',
  precondition: API_CONTROL,
  records: 'GET loans under each other scheme name; the positive control',
  fix: 'accept the token only under the Bearer scheme; answer other schemes 401 with a Bearer challenge',
  async run(context) {
    const control = await context.apiControl();
    if (!control.ok) return notVerified(control.reason);
    const problems: string[] = [];
    for (const scheme of schemes) {
      const exchange = await context.callApi('listLoans', {
        authorization: `${scheme} ${context.main.accessToken}`,
      });
      // 401 (no bearer credentials) or 400 invalid_request are both refusals the RFCs allow.
      if (isSuccess(exchange) || (exchange.status !== 401 && exchange.status !== 400))
        problems.push(
          `scheme ${scheme}: expected 401, got ${context.describe(exchange)}`,
          context.curl(exchange),
        );
    }
    return judge(problems, [`${schemes.join(', ')} refused`]);
  },
});
