import { operations } from '@partner-lending/spec';
import { API_CONTROL, defineCheck, judge, notVerified } from '../../check.js';
import { isSuccess } from '../../context.js';
import { insufficientScopeCalls } from '../helpers/insufficient-scope-calls.js';

/** A valid token without an endpoint's scope is never accepted there (any 2xx is a failure). */
export default defineCheck({
  id: 'scope-enforced',
  title: "A token without an endpoint's scope is refused there",
  category: 'scope-enforcement',
  severity: 'must',
  reference: 'API documentation §4.2, §5.5; RFC 6750 §3.1',
  citation:
    'Partner Lending API — Authentication and Access §5.5: "Each endpoint of 4.2 requires the scope listed for it."',
  precondition: `a token lacking the endpoint's scope can be had; the same route accepts a token with it (GET loans: ${API_CONTROL}; create endpoints only with --allow-writes)`,
  records:
    "each endpoint's call with a token lacking its scope, the token request, and the route's positive control",
  fix: "check the operation's scope on every request and refuse a token without it",
  async run(context) {
    const problems: string[] = [];
    const notes: string[] = [];
    for (const call of await insufficientScopeCalls(context)) {
      const label = `${operations[call.id].method} ${operations[call.id].path} without ${call.scope}`;
      if (!call.exchange) notes.push(`${label}: not checked, ${call.reason}`);
      // Judged on the fact the check names: the call without the scope was served (2xx). Any other
      // answer refused it; its status is scope-insufficient-403's question, a 5xx spec-no-server-errors'.
      else if (isSuccess(call.exchange))
        problems.push(
          `${label}: expected 403 insufficient_scope, got ${context.describe(call.exchange)}`,
          context.curl(call.exchange),
        );
      else notes.push(`${label}: ${call.exchange.status}`);
    }
    if (problems.length === 0 && notes.every((note) => note.includes(': not checked')))
      return notVerified(notes.join('; '));
    return judge(problems, notes);
  },
});
