import { apiOperationIds, operations, scopeFor } from '@partner-lending/spec';
import { defineCheck, judge } from '../../check.js';

/**
 * A valid token used on another partner's path is refused with 403 or 404 (404 hides that the partner
 * exists), never 2xx. Create calls are refused by a correct server: nothing is written.
 */
export default defineCheck({
  id: 'partner-isolation',
  title: "A valid token is refused on another partner's paths",
  category: 'partner-isolation',
  severity: 'must',
  reference: 'OWASP API Security Top 10 2023 API1 (BOLA); seed §4.2',
  async run(context) {
    const foreign = context.settings.foreignPartnerId ?? `${context.partnerId}-conformance-other`;
    const problems: string[] = [];
    const notes: string[] = [];
    for (const id of apiOperationIds) {
      const exchange = await context.callApi(id, { partnerId: foreign });
      const label = `${operations[id].method} ${operations[id].path} for partner ${foreign}`;
      // Without the endpoint's scope a 403 may be about the scope, not the partner: said so.
      const scope = scopeFor(id);
      const caveat = context.authorised.includes(scope)
        ? ''
        : ` (the token lacks ${scope}: not a proof of isolation)`;
      if (exchange.status === 403 || exchange.status === 404)
        notes.push(`${label}: ${exchange.status}${caveat}`);
      else
        problems.push(
          `${label}: expected 403 or 404, got ${context.describe(exchange)}`,
          context.curl(exchange),
        );
    }
    return judge(problems, notes);
  },
});
