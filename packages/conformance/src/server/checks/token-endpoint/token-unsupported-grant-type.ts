import { defineCheck, judge, notVerified } from '../../check.js';
import { errorCodeOf, jsonObject } from '../../http/probe.js';

const unknownGrant = 'urn:example:conformance:unknown-grant';

/** A grant_type other than client_credentials is refused with unsupported_grant_type. */
export default defineCheck({
  id: 'token-unsupported-grant-type',
  title: 'An unknown grant_type is refused with unsupported_grant_type',
  category: 'token-endpoint',
  severity: 'must',
  reference: 'RFC 6749 §5.2; API documentation §2.1 (grant_type is always client_credentials)',
  citation:
    'RFC 6749 §5.2: "The authorization server responds with an HTTP 400 (Bad Request) status code (unless specified otherwise) and includes the following parameters with the response: error REQUIRED." — unsupported_grant_type: "The authorization grant type is not supported by the authorization server."',
  precondition:
    'the same token request with the right credentials gets a token in this run (positive control of the token endpoint)',
  records: 'the request with an unknown grant_type and its answer; the positive-control token request',
  fix: 'accept only grant_type=client_credentials; answer any other value 400 unsupported_grant_type (RFC 6749 §5.2)',
  async run(context) {
    const control = await context.tokenControl();
    if (!control.ok) return notVerified(control.reason);
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
