import { audiencesOfClaim, sameUrl } from '../../../common/jwt.js';
import { API_CONTROL, defineCheck, failed, notVerified, passed } from '../../check.js';
import { isSuccess } from '../../context.js';

/** An audience that is not the partner API: a reserved name that can never be a real service. */
export const foreignAudience = 'https://foreign-api.conformance.invalid';

/**
 * The API side of the audience rule: the API itself refuses a token whose `aud` is another audience.
 * It passes only on that refusal; a token endpoint that will not issue such a token proves nothing
 * about the API (that is `audience-foreign-endpoint`).
 */
export default defineCheck({
  id: 'audience-foreign',
  title: 'The API refuses a token issued for another audience',
  category: 'audience',
  severity: 'must',
  reference: 'RFC 9068 §4; RFC 7519 §4.1.3; API documentation §5.3',
  citation:
    'RFC 9068 §4: "The resource server MUST validate that the "aud" claim contains a resource indicator value corresponding to an identifier the resource server expects for itself."',
  precondition: `a token whose aud is not the API can be had from the token endpoint (--other-audience AUD, an audience it issues for this client; or the reserved foreign audience, if the endpoint issues it); ${API_CONTROL}`,
  records:
    "the token request for the other audience, the API call with that token, and the API's positive control",
  fix: "have the API check that the token's aud contains its own base address and answer any other 401 invalid_token",
  async run(context) {
    const candidates = [context.settings.otherAudience, foreignAudience].filter(
      (item): item is string => item !== undefined,
    );
    const tried: string[] = [];
    for (const audience of candidates) {
      const outcome = await context.requestToken({ scopes: context.authorised, audience });
      const aud = audiencesOfClaim(outcome.jwt?.payload.aud) ?? [];
      if (!outcome.accessToken) {
        tried.push(`${audience}: ${context.describe(outcome.exchange)}`);
        continue;
      }
      if (aud.some((item) => sameUrl(item, context.target.audience))) {
        tried.push(`${audience}: issued, but for the API itself (aud ${JSON.stringify(aud)})`);
        continue;
      }
      const api = await context.apiControl();
      if (!api.ok) return notVerified(`a token for ${audience} was issued; ${api.reason}`);
      // GET loans: a correct API refuses the token (401) before any scope question arises.
      const exchange = await context.callApi('listLoans', { token: outcome.accessToken });
      if (exchange.status === 401)
        return passed(
          `a token for ${audience} (aud ${JSON.stringify(aud)}) was refused by the API: ${context.describe(exchange)}`,
        );
      return failed(
        `a token issued for ${audience} (aud ${JSON.stringify(aud)}) was ${isSuccess(exchange) ? 'accepted' : 'not refused with 401'} by the API: expected 401 invalid_token, got ${context.describe(exchange)}\n${context.curl(exchange)}`,
      );
    }
    return notVerified(
      `not verified at the API: no token for another audience could be had (${tried.join('; ')}), so whether the API checks aud is unknown. Verify it with --other-audience AUD (an audience your token endpoint issues for this client, such as a second API or one registered for certification)`,
    );
  },
});
