import { apiOperationIds, operations, scopeFor } from '@partner-lending/spec';
import { API_CONTROL, defineCheck, judge, notVerified } from '../../check.js';
import type { CheckContext } from '../../context.js';
import { isSuccess } from '../../context.js';

/**
 * The other partner: from its own client's token (PARTNER_OTHER_CLIENT_ID/SECRET; its own GET loans must
 * then work, proving the path is real), else the id given (--other-partner-id). Undefined: none known.
 */
async function otherPartner(
  context: CheckContext,
): Promise<{ id: string; proof: string } | { id: undefined; reason: string }> {
  const client = context.settings.otherClient;
  if (client) {
    const exchange = await context.postToken(context.tokenForm({ client, scopes: ['read:loans'] }));
    const outcome = context.readToken(exchange, ['read:loans'], context.target.audience);
    const id = outcome.body?.partnerId ?? outcome.jwt?.payload.partnerId;
    if (!outcome.accessToken || typeof id !== 'string')
      return {
        id: undefined,
        reason: `the second partner's client got no token with a partnerId (${context.describe(exchange)})`,
      };
    if (id === context.partnerId)
      return { id: undefined, reason: `the second client belongs to the same partner ${id}` };
    const own = await context.callApi('listLoans', { token: outcome.accessToken, partnerId: id });
    const ok = isSuccess(own) || (own.status === 403 && context.bearerError(own) === 'insufficient_scope');
    if (!ok)
      return {
        id: undefined,
        reason: `the second partner's own GET loans got ${context.describe(own)}, expected 2xx: its path is not shown to exist`,
      };
    return { id, proof: `partner ${id} (from the second client's token; its own GET loans: ${own.status})` };
  }
  const given = context.settings.foreignPartnerId;
  if (given) return { id: given, proof: `partner ${given} (given by --other-partner-id)` };
  return {
    id: undefined,
    reason:
      "no second partner is known: give --other-partner-id, or a second partner's credentials in PARTNER_OTHER_CLIENT_ID / PARTNER_OTHER_CLIENT_SECRET (a made-up id would pass a server without isolation)",
  };
}

/**
 * A valid token used on a real second partner's path is refused with 403 or 404 (404 hides that the
 * partner exists), never 2xx. Create endpoints are probed only with --allow-writes (a server without
 * isolation would write into the other partner's account), and only when they work for the tested one.
 */
export default defineCheck({
  id: 'partner-isolation',
  title: "A valid token is refused on another partner's paths",
  category: 'partner-isolation',
  severity: 'must',
  reference: 'OWASP API Security Top 10 2023 API1 (BOLA); API documentation §4.2',
  citation:
    'Partner Lending API — Authentication and Access §4.2: "{partner_id} is the partner identifier (the partnerId of the token response)."; OWASP API Security Top 10 2023 API1 (Broken Object Level Authorization)',
  precondition: `a real second partner is known (--other-partner-id, PARTNER_OTHER_CLIENT_ID/SECRET, or the embedded mock's second client); ${API_CONTROL}; with a second client, its own token gets 2xx on its own GET loans`,
  records:
    "the second partner's token request and own GET loans (when credentials are given); each call on the second partner's paths; the positive controls",
  fix: "compare the path's {partner_id} with the token's partnerId on every request and refuse another partner's paths",
  async run(context) {
    const control = await context.apiControl();
    if (!control.ok) return notVerified(control.reason);
    const other = await otherPartner(context);
    if (other.id === undefined) return notVerified(other.reason);
    const problems: string[] = [];
    const notes: string[] = [other.proof];
    for (const id of apiOperationIds) {
      const route = await context.routeControl(id);
      const label = `${operations[id].method} ${operations[id].path} for partner ${other.id}`;
      if (!route.ok) {
        notes.push(`${label}: not checked, ${route.reason}`);
        continue;
      }
      const exchange = await context.callApi(id, { partnerId: other.id });
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
    const proofs = notes.filter((note) => /: (403|404)$/.test(note));
    if (problems.length === 0 && proofs.length === 0)
      return notVerified(
        `no call on the other partner's paths could prove isolation (the token lacks each endpoint's scope, or the endpoint was not checked): ${notes.join('; ')}`,
      );
    return judge(problems, notes);
  },
});
