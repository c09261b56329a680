import { API_CONTROL, defineCheck, failed, notVerified, passed } from '../../check.js';
import { isSuccess } from '../../context.js';
import { audiencesOfClaim, sameUrl } from '../../jwt.js';

/** An audience that is not the partner API: a reserved name that can never be a real service. */
export const foreignAudience = 'https://foreign-api.conformance.invalid';

/**
 * A token asked for another audience is refused by the token endpoint or, if issued, refused by the API
 * (a token minted for one API must not open another).
 */
export default defineCheck({
  id: 'audience-foreign',
  title: 'A token for a foreign audience is refused by the token endpoint or the API',
  category: 'audience',
  severity: 'must',
  reference: 'API documentation §5.3; RFC 8707 §2; RFC 9068 §4',
  citation:
    'RFC 9068 §4: "The resource server MUST validate that the "aud" claim contains a resource indicator value corresponding to an identifier the resource server expects for itself."',
  precondition: `the same token request with the right credentials gets a token in this run (positive control of the token endpoint); when a foreign-audience token is issued, also: ${API_CONTROL}`,
  records:
    "the token request for a foreign audience; if a token came back, the API call with it and the API's positive control",
  async run(context) {
    const control = await context.tokenControl();
    if (!control.ok) return notVerified(control.reason);
    const outcome = await context.requestToken({ scopes: context.authorised, audience: foreignAudience });
    if (!outcome.accessToken) {
      if (outcome.exchange.status >= 400 && outcome.exchange.status < 500)
        return passed(
          `the token endpoint refused audience ${foreignAudience}: ${context.describe(outcome.exchange)}`,
        );
      return failed(
        `expected a 4xx refusal or a token, got ${context.describe(outcome.exchange)}\n${context.curl(outcome.exchange)}`,
      );
    }
    const aud = audiencesOfClaim(outcome.jwt?.payload.aud) ?? [];
    if (
      !aud.some((item) => sameUrl(item, foreignAudience)) &&
      aud.some((item) => sameUrl(item, context.target.audience))
    )
      return passed(
        `the token endpoint ignored the foreign audience and issued a token for ${JSON.stringify(aud)}`,
      );
    // GET loans: a correct server refuses the token (401) before any scope question arises; the refusal
    // counts only where a valid token works.
    const api = await context.apiControl();
    if (!api.ok) return notVerified(`a token for ${foreignAudience} was issued; ${api.reason}`);
    const exchange = await context.callApi('listLoans', { token: outcome.accessToken });
    if (isSuccess(exchange) || exchange.status >= 500)
      return failed(
        `a token for ${foreignAudience} (aud ${JSON.stringify(aud)}) was issued and the API accepted it: expected 401 invalid_token, got ${context.describe(exchange)}\n${context.curl(exchange)}`,
      );
    return exchange.status === 401
      ? passed(`issued for the foreign audience, then refused by the API: ${context.describe(exchange)}`)
      : failed(
          `expected the API to refuse the foreign-audience token with 401, got ${context.describe(exchange)}\n${context.curl(exchange)}`,
        );
  },
});
