import { scopes } from '@partner-lending/spec';
import { formatScopes, intersect, nonEmptySubsets, sameSet } from '../../../common/scope-set.js';
import { defineCheck, judge } from '../../check.js';
import { errorCodeOf } from '../../http/probe.js';

/** For every non-empty subset S of the four scopes, the granted scope is S ∩ A. */
export default defineCheck({
  id: 'scope-intersection',
  title: 'Every non-empty scope request is granted its intersection with the authorised set',
  category: 'scope-intersection',
  severity: 'must',
  reference: 'API documentation §4.1 rules 1–2; RFC 6749 §3.3, §5.2',
  citation:
    'Partner Lending API — Authentication and Access §2.2: "scope — … It is the intersection of the requested scopes and the scopes the partner is authorised for."',
  precondition: 'the preflight got a token (the run cannot start without one) (A learned by the preflight)',
  records: 'the token request for every non-empty subset of the four scopes',
  fix: 'grant requested ∩ authorised scopes (API documentation §4.1 rule 1): drop unauthorised ones, never add unrequested ones',
  async run(context) {
    const authorised = context.authorised;
    const problems: string[] = [];
    const subsets = nonEmptySubsets(scopes);
    const outcomes = await Promise.all(subsets.map((subset) => context.tokenFor(subset)));
    subsets.forEach((subset, index) => {
      const outcome = outcomes[index]!;
      const expected = intersect(subset, authorised);
      if (expected.length === 0) {
        // RFC 6749 §5.2 invalid_scope, or a token with an empty scope: both allowed.
        const refused = outcome.exchange.status === 400 && errorCodeOf(outcome.exchange) === 'invalid_scope';
        const empty = outcome.accessToken !== undefined && (outcome.granted ?? []).length === 0;
        if (!refused && !empty)
          problems.push(
            `asked ${formatScopes(subset)}: expected 400 invalid_scope or an empty scope, got ${outcome.accessToken ? `granted ${formatScopes(outcome.granted ?? [])}` : context.describe(outcome.exchange)}`,
          );
      } else if (!outcome.accessToken)
        problems.push(
          `asked ${formatScopes(subset)}: expected a token with ${formatScopes(expected)}, got ${context.describe(outcome.exchange)}`,
        );
      else if (!sameSet(outcome.granted ?? [], expected))
        problems.push(
          `asked ${formatScopes(subset)}: expected ${formatScopes(expected)}, got ${formatScopes(outcome.granted ?? [])}`,
        );
    });
    return judge(problems, [`${subsets.length} subsets`], [`A = ${formatScopes(authorised)}`]);
  },
});
