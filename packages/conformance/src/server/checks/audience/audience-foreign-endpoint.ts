import { audiencesOfClaim, sameUrl } from '../../../common/jwt.js';
import { defineCheck, failed, notVerified, passed } from '../../check.js';
import { foreignAudience } from './audience-foreign.js';

/** The token endpoint side of the audience rule: an unknown audience gets no token for it. */
export default defineCheck({
  id: 'audience-foreign-endpoint',
  title: 'The token endpoint issues no token for an audience it does not know',
  category: 'audience',
  severity: 'should',
  reference: 'API documentation §2.1, §5.3; RFC 8707 §2',
  citation:
    'Partner Lending API — Authentication and Access §5.3: "The audience of the token is the partner API in which it is used." (no normative word: should)',
  precondition:
    'the same token request with the right credentials gets a token in this run (positive control of the token endpoint)',
  records: 'the token request for a reserved, unknown audience and what came back',
  fix: 'refuse a token request for an audience the server does not serve (400 invalid_target, or 403), or issue for the partner API only',
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
        `expected a 4xx refusal (or a token for the API), got ${context.describe(outcome.exchange)}\n${context.curl(outcome.exchange)}`,
      );
    }
    const aud = audiencesOfClaim(outcome.jwt?.payload.aud) ?? [];
    if (
      !aud.some((item) => sameUrl(item, foreignAudience)) &&
      aud.some((item) => sameUrl(item, context.target.audience))
    )
      return passed(
        `the token endpoint ignored the unknown audience and issued a token for ${JSON.stringify(aud)}`,
      );
    return failed(
      `the token endpoint issued a token for the unknown audience ${foreignAudience} (aud ${JSON.stringify(aud)}): it should refuse it (400 invalid_target, RFC 8707 §2, or 403) or issue for the API only\n${context.curl(outcome.exchange)}`,
    );
  },
});
