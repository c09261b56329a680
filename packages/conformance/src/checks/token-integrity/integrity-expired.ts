import { defineCheck, failed, passed, skipped } from '../../check.js';

/**
 * A token is refused once its lifetime is over. The suite waits the real lifetime out (a token cannot
 * be made to expire early without the server's key) when it is at most `--max-expiry-wait` seconds.
 */
export default defineCheck({
  id: 'integrity-expired',
  title: 'An expired token is refused',
  category: 'token-integrity',
  severity: 'must',
  reference: 'seed §5.4; RFC 9068 §4; RFC 7519 §4.1.4; RFC 6750 §3.1',
  async run(context) {
    if (!context.canRead)
      return skipped('the client is not authorised for read:loans; GET loans is the write-free probe');
    const outcome = await context.requestToken({ scopes: context.authorised });
    const exp = outcome.jwt?.payload.exp;
    if (!outcome.accessToken || typeof exp !== 'number')
      return failed(`expected a token with a numeric exp claim, got ${context.describe(outcome.exchange)}`);
    const waitMs = exp * 1000 - context.now();
    const budget = context.settings.maxExpiryWaitSeconds;
    if (waitMs > budget * 1000)
      return skipped(
        `the token lives ${Math.ceil(waitMs / 1000)} s more, over --max-expiry-wait ${budget} s; run with a larger wait (or a short-lived token) to check expiry`,
      );
    const deadline = context.now() + budget * 1000;
    const before = await context.callApi('listLoans', { token: outcome.accessToken });
    // exp is in whole seconds and "at or after exp" is expired (RFC 7519 §4.1.4): one second margin.
    await context.sleep(Math.max(0, waitMs) + 1000);
    let after = await context.callApi('listLoans', { token: outcome.accessToken });
    // A server may allow a small clock-skew leeway (RFC 7519 §4.1.4): keep asking, once a second, while
    // the wait budget lasts.
    while (after.status !== 401 && context.now() + 1000 <= deadline) {
      await context.sleep(1000);
      after = await context.callApi('listLoans', { token: outcome.accessToken });
    }
    const late = Math.round((context.now() - exp * 1000) / 1000);
    if (after.status !== 401)
      return failed(
        `${late} s after exp (the end of the --max-expiry-wait budget): expected 401 invalid_token, got ${context.describe(after)}\n${context.curl(after)}`,
      );
    return passed(`before exp: ${before.status}; ${late} s after exp: ${context.describe(after)}`);
  },
});
