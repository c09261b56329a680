import { mediaTypeOf } from '../../../common/media-type.js';
import { defineCheck, judge } from '../../check.js';
import { jsonObject } from '../../http/probe.js';

const stringFields = ['access_token', 'token_type', 'scope', 'iss', 'partnerId', 'jti'] as const;

/** Positive control of the token endpoint: a form-encoded client-credentials request gets a token. */
export default defineCheck({
  id: 'token-success-response',
  title:
    'A form-encoded client_credentials request gets a bearer token with the fields of API documentation §2.2',
  category: 'token-endpoint',
  severity: 'must',
  reference: 'API documentation §2.1–2.2, §4.1; RFC 6749 §4.4.2–4.4.3, §5.1',
  citation:
    'Partner Lending API — Authentication and Access §4.1: "Success response: JSON object of section 2.2"; RFC 6749 §5.1: "access_token REQUIRED. The access token issued by the authorization server."',
  precondition: 'the preflight got a token (the run cannot start without one)',
  records: 'the preflight token request and its answer',
  fix: 'answer a valid client_credentials request with 200 and a JSON body holding access_token, token_type "bearer", expires_in, scope, iss, partnerId and jti (API documentation §2.2)',
  async run(context) {
    const { exchange } = context.main;
    const problems: string[] = [];
    if (exchange.status !== 200) problems.push(`expected 200, got ${context.describe(exchange)}`);
    const type = mediaTypeOf(exchange.headers);
    if (type !== 'application/json')
      problems.push(`expected Content-Type application/json, got ${type ?? 'none'}`);
    const body = jsonObject(exchange) ?? {};
    for (const field of stringFields)
      if (typeof body[field] !== 'string')
        problems.push(`expected ${field} to be a string, got ${JSON.stringify(typeof body[field])}`);
    if (!Number.isInteger(body.expires_in)) problems.push('expected expires_in to be an integer');
    const tokenType = body.token_type;
    if (typeof tokenType === 'string' && tokenType.toLowerCase() !== 'bearer')
      problems.push(
        `expected token_type "bearer" (any case, RFC 6749 §7.1), got ${JSON.stringify(tokenType)}`,
      );
    if (problems.length > 0) problems.push(context.curl(exchange));
    return judge(problems, [
      `token_type ${JSON.stringify(tokenType)}, granted ${JSON.stringify(body.scope)}`,
    ]);
  },
});
