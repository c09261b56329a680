import { operations } from '@partner-lending/spec';
import { defineCheck, judge } from '../../check.js';
import { isSuccess } from '../../context.js';

/**
 * A token in an `access_token` body field is not honoured. RFC 6750 §2.2 lets a server support the form
 * field, the seed does not (every call carries the header), hence `should`. The requests go to a create
 * endpoint without a header, which a correct server refuses: nothing is written.
 */
export default defineCheck({
  id: 'bearer-body-token',
  title: 'A token in a body field is not honoured',
  category: 'bearer-header',
  severity: 'should',
  reference: 'seed §4.2, §5.2; RFC 6750 §2.2',
  async run(context) {
    const id = 'createLoanDraft' as const;
    const token = context.main.accessToken!;
    const label = `${operations[id].method} ${operations[id].path} without a header`;
    const variants = [
      ['a form field', await context.callApi(id, { authorization: null, form: [['access_token', token]] })],
      ['a JSON field', await context.callApi(id, { authorization: null, json: { access_token: token } })],
    ] as const;
    const problems: string[] = [];
    const notes: string[] = [];
    for (const [where, exchange] of variants) {
      if (isSuccess(exchange) || exchange.status >= 500 || exchange.status < 400)
        problems.push(
          `${label}, the token in ${where}: expected 401, got ${context.describe(exchange)}`,
          context.curl(exchange),
        );
      else notes.push(`the token in ${where}: ${context.describe(exchange)}`);
    }
    return judge(problems, notes);
  },
});
