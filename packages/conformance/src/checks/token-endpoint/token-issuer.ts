import { defineCheck, judge } from '../../check.js';
import { sameUrl } from '../../jwt.js';

/** The response iss names the token's issuer, the same for every token (a trailing slash aside). */
export default defineCheck({
  id: 'token-issuer',
  title: 'iss of the response equals the iss claim and is stable',
  category: 'token-endpoint',
  severity: 'must',
  reference: 'seed §2.2; RFC 9068 §2.2; RFC 7519 §4.1.1',
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
    if (seen.length === 2 && !sameUrl(seen[0]!, seen[1]!))
      problems.push(`two tokens name different issuers: ${seen.join(', ')}`);
    return judge(problems, [`iss ${JSON.stringify(seen[0])}`]);
  },
});
