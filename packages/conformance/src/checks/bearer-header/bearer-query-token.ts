import { defineCheck, judge } from '../../check.js';
import { isSuccess } from '../../context.js';

/** A token in the `access_token` query parameter is not honoured: every call carries the header. */
export default defineCheck({
  id: 'bearer-query-token',
  title: 'A token in the query string is not honoured',
  category: 'bearer-header',
  severity: 'must',
  reference: 'seed §4.2, §5.2; RFC 6750 §2.3, §5.3',
  async run(context) {
    const exchange = await context.callApi('listLoans', {
      authorization: null,
      query: { access_token: context.main.accessToken! },
    });
    const problems =
      isSuccess(exchange) || exchange.status >= 500 || exchange.status < 400
        ? [
            `expected 401 (no header, the query token ignored), got ${context.describe(exchange)}`,
            context.curl(exchange),
          ]
        : [];
    return judge(problems, [`refused: ${context.describe(exchange)}`]);
  },
});
