import { apiOperationIds, operations, scopeFor } from '@partner-lending/spec';
import { defineCheck, judge } from '../../check.js';
import { isSuccess } from '../../context.js';

/**
 * Positive control: a token with exactly an endpoint's scope is accepted there. Create endpoints are
 * only called with `--allow-writes` (the call writes).
 */
export default defineCheck({
  id: 'scope-granted',
  title: "A token with an endpoint's scope is accepted there",
  category: 'scope-enforcement',
  severity: 'must',
  reference: 'seed §4.2, §5.5',
  async run(context) {
    const problems: string[] = [];
    const notes: string[] = [];
    for (const id of apiOperationIds) {
      const scope = scopeFor(id);
      const label = `${operations[id].method} ${operations[id].path} with ${scope}`;
      if (!context.authorised.includes(scope)) {
        notes.push(`${label}: not checked, the client is not authorised for ${scope}`);
        continue;
      }
      if (operations[id].method !== 'GET' && !context.settings.allowWrites) {
        notes.push(`${label}: not checked (writes; run with --allow-writes)`);
        continue;
      }
      const token = await context.tokenFor([scope]);
      if (!token.accessToken) {
        problems.push(`${label}: expected a token for ${scope}, got ${context.describe(token.exchange)}`);
        continue;
      }
      const exchange = await context.callApi(id, { token: token.accessToken });
      if (isSuccess(exchange)) notes.push(`${label}: ${exchange.status}`);
      else problems.push(`${label}: expected 2xx, got ${context.describe(exchange)}`, context.curl(exchange));
    }
    return judge(problems, notes);
  },
});
