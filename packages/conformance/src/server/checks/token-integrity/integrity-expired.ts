import { defineCheck, failed, notVerified, passed } from '../../check.js';

/** The largest clock-skew leeway accepted after exp: RFC 7519 §4.1.4's "a few minutes", taken as 5. */
export const maxLeewaySeconds = 300;

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
    'the token lives at most --max-expiry-wait seconds, the same token gets 2xx on GET loans before exp, and the budget lasts until the API refuses it or 300 s of leeway after exp have passed',
  records:
    'the short-lived token request, GET loans with it before exp, and after exp until refused (1 s apart, then 5 s, then 15 s): the observed leeway',
  fix: 'check exp on every request (a leeway of at most a few minutes) and answer an expired token 401 invalid_token',
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
    // A server may allow clock-skew leeway (RFC 7519 §4.1.4: "usually no more than a few minutes"):
    // probe until it refuses, up to maxLeewaySeconds after exp, less often as time goes by.
    const expMs = exp * 1000;
    const lateBy = () => Math.round((context.now() - expMs) / 100) / 10;
    let lastAccepted: number | undefined;
    for (;;) {
      const after = await context.callApi('listLoans', { token: outcome.accessToken });
      const late = lateBy();
      if (after.status < 200 || after.status >= 300) {
        const leeway =
          lastAccepted === undefined ? 'none observed' : `at least ${lastAccepted} s (accepted then)`;
        const how =
          after.status === 401
            ? context.describe(after)
            : `${context.describe(after)} (refused; RFC 6750 §3.1 answers an expired token 401 invalid_token)`;
        return passed(
          `before exp: ${before.status}; refused ${late} s after exp: ${how}; observed leeway: ${leeway}`,
        );
      }
      lastAccepted = late;
      if (late > maxLeewaySeconds)
        return failed(
          `still accepted ${late} s after exp, beyond the ${maxLeewaySeconds} s of leeway allowed for clock skew (RFC 7519 §4.1.4: "usually no more than a few minutes"): expected 401 invalid_token, got ${context.describe(after)}\n${context.curl(after)}`,
        );
      const pause = late < 10 ? 1000 : late < 60 ? 5000 : 15_000;
      if (context.now() + pause > deadline)
        return notVerified(
          `the token was still accepted ${late} s after exp when the --max-expiry-wait budget (${budget} s) ended: an API may allow up to ${maxLeewaySeconds} s of leeway, so this is not judged. Observed leeway: at least ${late} s. Run with --max-expiry-wait ${Math.ceil(waitMs / 1000) + maxLeewaySeconds + 15} (or more) to judge it`,
        );
      await context.sleep(pause);
    }
  },
});
