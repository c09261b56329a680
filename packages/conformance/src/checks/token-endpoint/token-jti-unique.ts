import { defineCheck, judge } from '../../check.js';

/** Each token has its own jti, and the response jti names the token's jti claim. */
export default defineCheck({
  id: 'token-jti-unique',
  title: 'jti is unique across tokens and matches the token',
  category: 'token-endpoint',
  severity: 'must',
  reference: 'seed §2.2; RFC 9068 §2.2; RFC 7519 §4.1.7',
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
    if (tokens.length < 2) problems.push(`expected ${fresh.length + 1} tokens, got ${tokens.length}`);
    return judge(problems, [`${seen.size} distinct jti over ${tokens.length} tokens`]);
  },
});
