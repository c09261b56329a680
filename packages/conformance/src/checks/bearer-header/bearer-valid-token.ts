import { defineCheck, failed, passed, skipped } from '../../check.js';

/** Positive control: a valid token in `Authorization: Bearer` is accepted, so that refusals mean something. */
export default defineCheck({
  id: 'bearer-valid-token',
  title: 'A valid token in the Authorization header is accepted',
  category: 'bearer-header',
  severity: 'must',
  reference: 'seed §4.2, §5.2; RFC 6750 §2.1',
  async run(context) {
    if (!context.canRead)
      return skipped('the client is not authorised for read:loans; GET loans is the write-free control');
    const exchange = await context.callApi('listLoans');
    return exchange.status === 200
      ? passed('GET loans with a valid token: 200')
      : failed(
          `expected 200 for a valid token, got ${context.describe(exchange)}\n${context.curl(exchange)}`,
        );
  },
});
