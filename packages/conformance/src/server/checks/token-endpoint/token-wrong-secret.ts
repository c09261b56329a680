import { randomBytes } from 'node:crypto';
import { defineCheck, judge, notVerified } from '../../check.js';
import { errorCodeOf, jsonObject } from '../../http/probe.js';

/** A known client_id with a wrong secret is refused with invalid_client and never gets a token. */
export default defineCheck({
  id: 'token-wrong-secret',
  title: 'A wrong client secret is refused with invalid_client, never a token',
  category: 'token-endpoint',
  severity: 'must',
  reference: 'RFC 6749 §2.3.1, §5.2; API documentation §4.1, §5.6',
  citation: 'RFC 6749 §4.4.2: "The authorization server MUST authenticate the client."',
  precondition:
    'the same token request with the right credentials gets a token in this run (positive control of the token endpoint)',
  records:
    'the request with a wrong secret (shown as <WRONG_SECRET>) and its answer; the positive-control token request',
  fix: 'compare the client secret (in constant time) and answer a mismatch 401 invalid_client, the same answer as for an unknown client',
  async run(context) {
    const control = await context.tokenControl();
    if (!control.ok) return notVerified(control.reason);
    const wrong = `wrong-${randomBytes(12).toString('base64url')}`;
    const form = context
      .tokenForm({ scopes: context.authorised })
      .map(([name, value]): [string, string] => [name, name === 'client_secret' ? wrong : value]);
    const exchange = await context.postToken(form);
    const problems: string[] = [];
    if (typeof jsonObject(exchange)?.access_token === 'string')
      problems.push('a token was issued for a wrong secret');
    // RFC 6749 §5.2: invalid_client with 401 (or 400 when no Authorization header was used).
    if (!((exchange.status === 401 || exchange.status === 400) && errorCodeOf(exchange) === 'invalid_client'))
      problems.push(`expected 401 invalid_client, got ${context.describe(exchange)}`);
    if (problems.length > 0) problems.push(context.curl(exchange).replace(wrong, '<WRONG_SECRET>'));
    return judge(problems, [`refused with ${context.describe(exchange)}`]);
  },
});
