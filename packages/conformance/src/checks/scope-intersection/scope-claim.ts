import { scopes } from '@partner-lending/spec';
import { defineCheck, judge } from '../../check.js';
import { scopesOfClaim } from '../../jwt.js';
import { formatScopes, nonEmptySubsets, sameSet } from '../../scope-set.js';

/** The token's scope claim (string or array) names the scopes the response says were granted. */
export default defineCheck({
  id: 'scope-claim',
  title: "The token's scope claim equals the granted scope of the response",
  category: 'scope-intersection',
  severity: 'must',
  reference: 'seed §2.2, §4.1 rule 1; RFC 9068 §2.2.3',
  async run(context) {
    const problems: string[] = [];
    const subsets = nonEmptySubsets(scopes);
    const outcomes = await Promise.all(subsets.map((subset) => context.tokenFor(subset)));
    let compared = 0;
    for (const [index, outcome] of outcomes.entries()) {
      if (!outcome.accessToken) continue;
      compared += 1;
      const claim = scopesOfClaim(outcome.jwt?.payload.scope);
      const granted = outcome.granted ?? [];
      if (claim === undefined)
        problems.push(
          `asked ${formatScopes(subsets[index]!)}: the token has no scope claim (string or array of strings)`,
        );
      else if (!sameSet(claim, granted))
        problems.push(
          `asked ${formatScopes(subsets[index]!)}: the response grants ${formatScopes(granted)}, the claim says ${formatScopes(claim)}`,
        );
    }
    return judge(problems, [`${compared} tokens compared`]);
  },
});
