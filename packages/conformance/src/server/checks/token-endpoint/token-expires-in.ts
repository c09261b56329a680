import { defineCheck, judge } from '../../check.js';

/** How far expires_in may stray from the JWT lifetime: the deployed service is one second short. */
const toleranceSeconds = 5;

/** expires_in is a positive integer that agrees with the token's own lifetime (exp − iat). */
export default defineCheck({
  id: 'token-expires-in',
  title: 'expires_in is a positive integer consistent with exp − iat',
  category: 'token-endpoint',
  severity: 'must',
  reference: 'API documentation §2.2, §5.4, §8; RFC 6749 §5.1; RFC 7519 §4.1.4',
  citation:
    'Partner Lending API — Authentication and Access §2.2: "expires_in — Number of seconds the token is valid. The JWT also carries an expiry claim (exp) that can be checked."',
  precondition: 'the preflight got a token (the run cannot start without one), a JWT with a numeric exp',
  records: 'the preflight token answer (expires_in; exp and iat read from the token)',
  fix: "set expires_in to the token's lifetime in whole seconds, at most exp − iat of the JWT",
  async run(context) {
    const { body, jwt, exchange } = context.main;
    const expiresIn = body?.expires_in;
    const problems: string[] = [];
    if (typeof expiresIn !== 'number' || !Number.isInteger(expiresIn) || expiresIn <= 0)
      return judge(
        [`expected a positive integer expires_in, got ${JSON.stringify(expiresIn)}`, context.curl(exchange)],
        [],
      );
    const exp = jwt?.payload.exp;
    if (typeof exp !== 'number') return judge([`the token has no numeric exp claim (RFC 9068 §2.2)`], []);
    const iat = jwt?.payload.iat;
    const lifetime = typeof iat === 'number' ? exp - iat : exp - Math.floor(context.now() / 1000);
    const basis = typeof iat === 'number' ? 'exp − iat' : 'exp − now (no iat claim)';
    if (Math.abs(expiresIn - lifetime) > toleranceSeconds + (typeof iat === 'number' ? 0 : 2))
      problems.push(
        `expected expires_in within ${toleranceSeconds} s of ${basis} = ${lifetime} s, got ${expiresIn}`,
      );
    return judge(problems, [`expires_in ${expiresIn}, ${basis} ${lifetime}`]);
  },
});
