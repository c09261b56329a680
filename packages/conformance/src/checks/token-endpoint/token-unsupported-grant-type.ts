import { defineCheck, judge } from '../../check.js';
import { errorCodeOf, jsonObject } from '../../http-probe.js';

const unknownGrant = 'urn:example:conformance:unknown-grant';

/** A grant_type other than client_credentials is refused with unsupported_grant_type. */
export default defineCheck({
  id: 'token-unsupported-grant-type',
  title: 'An unknown grant_type is refused with unsupported_grant_type',
  category: 'token-endpoint',
  severity: 'must',
  reference: 'RFC 6749 §5.2; seed §2.1 (grant_type is always client_credentials)',
  async run(context) {
    const form = context
      .tokenForm({ scopes: context.authorised })
      .map(([name, value]): [string, string] => [name, name === 'grant_type' ? unknownGrant : value]);
    const exchange = await context.postToken(form);
    const problems: string[] = [];
    if (typeof jsonObject(exchange)?.access_token === 'string')
      problems.push(`a token was issued for grant_type=${unknownGrant}`);
    if (exchange.status !== 400 || errorCodeOf(exchange) !== 'unsupported_grant_type')
      problems.push(`expected 400 unsupported_grant_type, got ${context.describe(exchange)}`);
    if (problems.length > 0) problems.push(context.curl(exchange));
    return judge(problems, [`refused with ${context.describe(exchange)}`]);
  },
});
