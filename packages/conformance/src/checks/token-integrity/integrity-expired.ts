import { defineCheck, failed, notVerified, passed } from '../../check.js';

/**
 * A token is refused once its lifetime is over. The suite waits the real lifetime out (a token cannot
 * be made to expire early without the server's key) when it is at most `--max-expiry-wait` seconds.
 */
export default defineCheck({
  id: 'integrity-expired',
  title: 'An expired token is refused',
  category: 'token-integrity',
  severity: 'must',
  reference: 'API documentation §5.4; RFC 9068 §4; RFC 7519 §4.1.4; RFC 6750 §3.1',
  citation:
    'RFC 9068 §4: "The current time MUST be before the time represented by the "exp" claim."; Partner Lending API — Authentication and Access §5.4: "The token is valid for expires_in seconds; after that it is no longer usable."',
  precondition:
    'the token lives at most --max-expiry-wait seconds, and the same token gets 2xx on GET loans before exp',
  records: 'the short-lived token request, GET loans with it before exp and after it',
  async run(context) {
    if (!context.canRead)
      return notVerified('the client is not authorised for read:loans; GET loans is the write-free probe');
    const outcome = await context.requestToken({ scopes: context.authorised });
    const exp = outcome.jwt?.payload.exp;
    if (!outcome.accessToken || typeof exp !== 'number')
      return failed(`expected a token with a numeric exp claim, got ${context.describe(outcome.exchange)}`);
    const waitMs = exp * 1000 - context.now();
    const budget = context.settings.maxExpiryWaitSeconds;
    if (waitMs > budget * 1000)
      return notVerified(
        `the token lives ${Math.ceil(waitMs / 1000)} s more, over --max-expiry-wait ${budget} s; run with a larger wait (or a short-lived token) to check expiry`,
      );
    const deadline = context.now() + budget * 1000;
    const before = await context.callApi('listLoans', { token: outcome.accessToken });
    // The positive control: the same token works before exp, so that a refusal after it means expiry.
    if (before.status < 200 || before.status >= 300)
      return notVerified(
        `the token was refused before exp (${context.describe(before)}): a refusal after exp would prove nothing`,
      );
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
