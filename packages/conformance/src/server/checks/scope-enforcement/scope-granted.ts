import { apiOperationIds, operations, scopeFor } from '@partner-lending/spec';
import { defineCheck, judge, notVerified } from '../../check.js';
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
  reference: 'API documentation §4.2, §5.5',
  citation:
    'Partner Lending API — Authentication and Access §5.5: "Each endpoint of 4.2 requires the scope listed for it."',
  precondition:
    'at least one endpoint probed: the client holds its scope (create endpoints only with --allow-writes)',
  records: "each endpoint's call with a token of exactly its scope, and that token request",
  fix: "accept a token whose scope claim (array or space-separated string) holds the operation's scope",
  async run(context) {
    const problems: string[] = [];
    const notes: string[] = [];
    let probed = 0;
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
      const { token, exchange } = await context.scopedCall(id);
      if (!exchange) {
        problems.push(`${label}: expected a token for ${scope}, got ${context.describe(token.exchange)}`);
        continue;
      }
      probed += 1;
      if (isSuccess(exchange)) notes.push(`${label}: ${exchange.status}`);
      else problems.push(`${label}: expected 2xx, got ${context.describe(exchange)}`, context.curl(exchange));
    }
    if (problems.length === 0 && probed === 0)
      return notVerified(`no endpoint was probed: ${notes.join('; ')}`);
    return judge(problems, notes);
  },
});
