import { defineCheck, judge, notVerified } from '../../check.js';

/** Each token has its own jti, and the response jti names the token's jti claim. */
export default defineCheck({
  id: 'token-jti-unique',
  title: 'jti is unique across tokens and matches the token',
  category: 'token-endpoint',
  severity: 'must',
  reference: 'API documentation §2.2; RFC 9068 §2.2; RFC 7519 §4.1.7',
  citation: 'Partner Lending API — Authentication and Access §2.2: "jti — Unique identifier of the token."',
  precondition:
    'the same token request with the right credentials gets a token in this run (positive control of the token endpoint); at least two tokens to compare',
  records: 'the preflight and three fresh token requests with their answers',
  fix: "give every token its own random jti and repeat it in the response's jti field",
  async run(context) {
    const fresh = await Promise.all(
      [1, 2, 3].map(() => context.requestToken({ scopes: context.authorised })),
    );
    const tokens = [context.main, ...fresh].filter((outcome) => outcome.accessToken);
    const problems: string[] = [];
    const seen = new Map<string, number>();
    for (const outcome of tokens) {
      const claim = outcome.jwt?.payload.jti;
      const field = outcome.body?.jti;
      if (typeof claim !== 'string' || claim.length === 0) problems.push('a token carries no jti claim');
      else {
        seen.set(claim, (seen.get(claim) ?? 0) + 1);
        if (field !== claim)
          problems.push(
            `the response jti ${JSON.stringify(field)} differs from the claim ${JSON.stringify(claim)}`,
          );
      }
    }
    for (const [jti, count] of seen)
      if (count > 1) problems.push(`${count} of ${tokens.length} tokens share jti ${JSON.stringify(jti)}`);
    if (tokens.length < 2)
      return notVerified(
        `only ${tokens.length} token of ${fresh.length + 1} requests: nothing to compare (${context.describe(fresh[0]!.exchange)})`,
      );
    return judge(problems, [`${seen.size} distinct jti over ${tokens.length} tokens`]);
  },
});
