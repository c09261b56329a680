import { sameUrl } from '../../../common/jwt.js';
import { defineCheck, judge, notVerified } from '../../check.js';

/** The response iss names the token's issuer, the same for every token (a trailing slash aside). */
export default defineCheck({
  id: 'token-issuer',
  title: 'iss of the response equals the iss claim and is stable',
  category: 'token-endpoint',
  severity: 'must',
  reference: 'API documentation §2.2; RFC 9068 §2.2; RFC 7519 §4.1.1',
  citation: 'Partner Lending API — Authentication and Access §2.2: "iss — Issuer of the JWT."',
  precondition:
    'the same token request with the right credentials gets a token in this run (positive control of the token endpoint); two tokens to compare',
  records: 'the preflight and a second token request with their answers',
  fix: "use one issuer value for the response's iss and the JWT's iss claim, the same on every token",
  async run(context) {
    const other = await context.tokenFor(context.authorised.slice(0, 1));
    const problems: string[] = [];
    const seen: string[] = [];
    for (const outcome of [context.main, other]) {
      if (!outcome.accessToken) continue;
      const field = outcome.body?.iss;
      const claim = outcome.jwt?.payload.iss;
      if (typeof claim !== 'string') problems.push('a token carries no iss claim');
      else if (typeof field !== 'string')
        problems.push(`expected an iss string in the token response, got ${JSON.stringify(field)}`);
      // The deployed service's iss ends with a slash: compare up to a trailing slash.
      else if (!sameUrl(field, claim))
        problems.push(
          `the response iss ${JSON.stringify(field)} differs from the claim ${JSON.stringify(claim)}`,
        );
      if (typeof claim === 'string') seen.push(claim);
    }
    if (problems.length === 0 && !other.accessToken)
      return notVerified(
        `a second token was refused (${context.describe(other.exchange)}): the issuer's stability was not compared`,
      );
    if (seen.length === 2 && !sameUrl(seen[0]!, seen[1]!))
      problems.push(`two tokens name different issuers: ${seen.join(', ')}`);
    return judge(problems, [`iss ${JSON.stringify(seen[0])}`]);
  },
});
