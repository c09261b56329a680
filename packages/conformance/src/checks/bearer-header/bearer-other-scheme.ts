import { defineCheck, judge } from '../../check.js';
import { isSuccess } from '../../context.js';

const schemes = ['Token', 'Basic', 'JWT', 'MAC', 'Bearer2'];

/** A valid token under any other scheme name is not a bearer credential: 401. */
export default defineCheck({
  id: 'bearer-other-scheme',
  title: 'A valid token under another auth scheme is refused',
  category: 'bearer-header',
  severity: 'must',
  reference: 'RFC 6750 §2.1, §3; RFC 9110 §11.6.2; seed §5.2',
  async run(context) {
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
