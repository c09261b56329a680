import { operations } from '@partner-lending/spec';
import { defineCheck, judge } from '../../check.js';
import { isSuccess } from '../../context.js';
import { insufficientScopeCalls } from './insufficient-scope-calls.js';

/** A valid token without an endpoint's scope is never accepted there (any 2xx is a failure). */
export default defineCheck({
  id: 'scope-enforced',
  title: "A token without an endpoint's scope is refused there",
  category: 'scope-enforcement',
  severity: 'must',
  reference: 'seed §4.2, §5.5; RFC 6750 §3.1',
  async run(context) {
    const problems: string[] = [];
    const notes: string[] = [];
    for (const call of await insufficientScopeCalls(context)) {
      const label = `${operations[call.id].method} ${operations[call.id].path} without ${call.scope}`;
      if (!call.exchange) notes.push(`${label}: not checked, ${call.reason}`);
      else if (isSuccess(call.exchange) || call.exchange.status >= 500 || call.exchange.status < 400)
        problems.push(
          `${label}: expected 403 insufficient_scope, got ${context.describe(call.exchange)}`,
          context.curl(call.exchange),
        );
      else notes.push(`${label}: ${call.exchange.status}`);
    }
    return judge(problems, notes);
  },
});
