import { bearerChallengeOf } from '../../../common/bearer-challenge.js';
import { API_CONTROL, defineCheck, judge, notVerified } from '../../check.js';
import { tamperedPayloadToken } from '../../forgery/token-forger.js';

/** A bad token gets 401 with `WWW-Authenticate: Bearer error="invalid_token"`. */
export default defineCheck({
  id: 'bearer-invalid-token-error',
  title: 'A bad token gets a Bearer challenge with error="invalid_token"',
  category: 'bearer-header',
  severity: 'should',
  reference: 'RFC 6750 §3, §3.1',
  citation:
    'RFC 6750 §3.1: "invalid_token — The access token provided is expired, revoked, malformed, or invalid for other reasons. The resource SHOULD respond with the HTTP 401 (Unauthorized) status code."',
  precondition: API_CONTROL,
  records: 'GET loans with a junk and a tampered token (status, WWW-Authenticate); the positive control',
  fix: 'answer a bad or expired token 401 with WWW-Authenticate: Bearer error="invalid_token" (RFC 6750 §3.1)',
  async run(context) {
    const control = await context.apiControl();
    if (!control.ok) return notVerified(control.reason);
    const problems: string[] = [];
    const bad = [
      'not-a-jwt-conformance',
      tamperedPayloadToken(context.main.accessToken!, context.authorised),
    ];
    for (const token of bad) {
      const exchange = await context.callApi('listLoans', { token });
      const { challenge, problems: syntax } = bearerChallengeOf(exchange.headers);
      const found: string[] = [];
      if (exchange.status !== 401) found.push(`expected 401, got ${exchange.status}`);
      found.push(...syntax.map((problem) => `WWW-Authenticate: ${problem}`));
      if (challenge && challenge.params.error !== 'invalid_token')
        found.push(
          `expected error="invalid_token" in the challenge, got ${JSON.stringify(challenge.params.error ?? null)}`,
        );
      if (found.length > 0)
        problems.push(
          `token ${token.length > 30 ? 'with a tampered payload' : JSON.stringify(token)}: ${found.join('; ')}`,
          context.curl(exchange),
        );
    }
    return judge(problems, ['401 with error="invalid_token" for a junk and a tampered token']);
  },
});
