import { operations } from '@partner-lending/spec';
import { defineCheck, judge } from '../../check.js';
import { isSuccess } from '../../context.js';

/**
 * A token in an `access_token` form field is not honoured. RFC 6750 §2.2 lets a server support it, the
 * seed does not (every call carries the header), hence `should`. The request goes to a create endpoint
 * without a header, which a correct server refuses: nothing is written.
 */
export default defineCheck({
  id: 'bearer-body-token',
  title: 'A token in a form body field is not honoured',
  category: 'bearer-header',
  severity: 'should',
  reference: 'seed §4.2, §5.2; RFC 6750 §2.2',
  async run(context) {
    const id = 'createLoanDraft' as const;
    const exchange = await context.callApi(id, {
      authorization: null,
      form: [['access_token', context.main.accessToken!]],
    });
    const problems =
      isSuccess(exchange) || exchange.status >= 500 || exchange.status < 400
        ? [
            `${operations[id].method} ${operations[id].path} with the token in the body and no header: expected 401, got ${context.describe(exchange)}`,
            context.curl(exchange),
          ]
        : [];
    return judge(problems, [`refused: ${context.describe(exchange)}`]);
  },
});
