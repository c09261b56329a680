import { defineCheck, judge, skipped } from '../../check.js';

/** The auth-scheme is case-insensitive: `bearer` and `BEARER` work like `Bearer`. */
export default defineCheck({
  id: 'bearer-scheme-case',
  title: 'The Bearer scheme is accepted in any case',
  category: 'bearer-header',
  severity: 'must',
  reference: 'RFC 9110 §11.1; RFC 6750 §2.1',
  async run(context) {
    if (!context.canRead)
      return skipped('the client is not authorised for read:loans; GET loans is the write-free control');
    const token = context.main.accessToken;
    const problems: string[] = [];
    for (const scheme of ['bearer', 'BEARER', 'bEaReR']) {
      const exchange = await context.callApi('listLoans', { authorization: `${scheme} ${token}` });
      if (exchange.status !== 200)
        problems.push(
          `scheme ${scheme}: expected 200, got ${context.describe(exchange)}`,
          context.curl(exchange),
        );
    }
    return judge(problems, ['bearer, BEARER and bEaReR accepted']);
  },
});
