import { bearerChallengeOf } from '../../bearer-challenge.js';
import { defineCheck, judge } from '../../check.js';

/** No Authorization header → 401 with a well-formed Bearer challenge. */
export default defineCheck({
  id: 'bearer-missing-header',
  title: 'A request without Authorization gets 401 with a Bearer challenge',
  category: 'bearer-header',
  severity: 'must',
  reference: 'RFC 6750 §3, §3.1; RFC 9110 §11.6.1; seed §5.2',
  async run(context) {
    const exchange = await context.callApi('listLoans', { authorization: null });
    const problems: string[] = [];
    const notes: string[] = [];
    if (exchange.status !== 401) problems.push(`expected 401, got ${context.describe(exchange)}`);
    const { challenge, problems: syntax } = bearerChallengeOf(exchange.headers);
    problems.push(...syntax.map((problem) => `WWW-Authenticate: ${problem}`));
    // RFC 6750 §3.1: without credentials the server SHOULD NOT include an error code.
    if (challenge?.params.error !== undefined)
      notes.push(
        `note: the challenge carries error="${challenge.params.error}" although no credentials were sent`,
      );
    if (problems.length > 0) problems.push(context.curl(exchange));
    return judge(problems, [...notes, context.describe(exchange)]);
  },
});
