import { defineCheck, judge, notVerified } from '../../check.js';

/** The auth-scheme is case-insensitive: `bearer` and `BEARER` work like `Bearer`. */
export default defineCheck({
  id: 'bearer-scheme-case',
  title: 'The Bearer scheme is accepted in any case',
  category: 'bearer-header',
  severity: 'must',
  reference: 'RFC 9110 §11.1; RFC 6750 §2.1',
  citation: 'RFC 9110 §11.1: "It uses a case-insensitive token to identify the authentication scheme"',
  precondition: 'the client is authorised for read:loans and GET loans with "Bearer" gets 2xx',
  records: 'GET loans with bearer, BEARER and bEaReR; the positive control',
  fix: 'compare the auth scheme case-insensitively: "bearer" and "BEARER" are Bearer (RFC 9110 §11.1)',
  async run(context) {
    const control = await context.apiControl();
    if (!control.ok) return notVerified(control.reason);
    if (!context.canRead)
      return notVerified('the client is not authorised for read:loans; GET loans is the write-free control');
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
