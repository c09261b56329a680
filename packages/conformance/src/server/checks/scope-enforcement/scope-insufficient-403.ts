import { operations } from '@partner-lending/spec';
import { bearerChallengeOf } from '../../../common/bearer-challenge.js';
import { defineCheck, judge, notVerified } from '../../check.js';
import { insufficientScopeCalls } from '../helpers/insufficient-scope-calls.js';

/**
 * The refusal of a token lacking a scope is RFC 6750's: 403 with error="insufficient_scope". `should`:
 * the deployed service documents only "an error status".
 */
export default defineCheck({
  id: 'scope-insufficient-403',
  title: 'A missing scope is answered 403 insufficient_scope',
  category: 'scope-enforcement',
  severity: 'should',
  reference: 'RFC 6750 §3.1; API documentation §5.5',
  citation:
    'RFC 6750 §3.1: "insufficient_scope — The request requires higher privileges than provided by the access token. The resource server SHOULD respond with the HTTP 403 (Forbidden) status code"',
  precondition: 'as scope-enforced',
  records: 'as scope-enforced (status, WWW-Authenticate error and scope)',
  fix: 'answer a token without the operation\'s scope 403 with WWW-Authenticate: Bearer error="insufficient_scope", scope="…"',
  async run(context) {
    const problems: string[] = [];
    const notes: string[] = [];
    for (const call of await insufficientScopeCalls(context)) {
      const label = `${operations[call.id].method} ${operations[call.id].path} without ${call.scope}`;
      if (!call.exchange) {
        notes.push(`${label}: not checked, ${call.reason}`);
        continue;
      }
      const error = context.bearerError(call.exchange);
      if (call.exchange.status !== 403 || error !== 'insufficient_scope')
        problems.push(
          `${label}: expected 403 insufficient_scope, got ${context.describe(call.exchange)}`,
          context.curl(call.exchange),
        );
      else {
        const scope = bearerChallengeOf(call.exchange.headers).challenge?.params.scope;
        notes.push(`${label}: 403 insufficient_scope${scope ? `, scope="${scope}"` : ''}`);
      }
    }
    if (problems.length === 0 && notes.every((note) => note.includes(': not checked')))
      return notVerified(notes.join('; '));
    return judge(problems, notes);
  },
});
