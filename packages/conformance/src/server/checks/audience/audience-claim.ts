import { audiencesOfClaim, sameUrl } from '../../../common/jwt.js';
import { defineCheck, judge } from '../../check.js';

/** The token's aud (string or array) contains the audience it was asked for: the partner API. */
export default defineCheck({
  id: 'audience-claim',
  title: "The token's aud contains the requested audience",
  category: 'audience',
  severity: 'must',
  reference: 'API documentation §2.1, §5.3; RFC 9068 §2.2; RFC 7519 §4.1.3',
  citation:
    'RFC 9068 §2.2: "aud REQUIRED — as defined in Section 4.1.3 of [RFC7519]"; Partner Lending API — Authentication and Access §5.3: "The audience of the token is the partner API in which it is used."',
  precondition: 'the preflight got a token (the run cannot start without one), a JWT',
  records: 'the preflight token answer (aud claim)',
  fix: "put the requested audience (the partner API's base address) into the JWT aud claim",
  async run(context) {
    const claim = context.main.jwt?.payload.aud;
    const audiences = audiencesOfClaim(claim);
    const wanted = context.target.audience;
    if (audiences === undefined)
      return judge([`expected an aud claim (string or array), got ${JSON.stringify(claim)}`], []);
    return judge(
      audiences.some((aud) => sameUrl(aud, wanted))
        ? []
        : [`expected aud to contain ${wanted}, got ${JSON.stringify(claim)}`],
      [`aud ${JSON.stringify(claim)}`],
    );
  },
});
