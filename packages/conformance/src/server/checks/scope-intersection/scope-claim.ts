import { scopes } from '@partner-lending/spec';
import { scopesOfClaim } from '../../../common/jwt.js';
import { formatScopes, nonEmptySubsets, sameSet } from '../../../common/scope-set.js';
import { defineCheck, judge, notVerified } from '../../check.js';

/** The token's scope claim (string or array) names the scopes the response says were granted. */
export default defineCheck({
  id: 'scope-claim',
  title: "The token's scope claim equals the granted scope of the response",
  category: 'scope-intersection',
  severity: 'should',
  reference: 'API documentation §2.2, §4.1 rule 1; RFC 9068 §2.2.3',
  citation:
    'RFC 9068 §2.2.3: "If an authorization request includes a scope parameter, the corresponding issued JWT access token SHOULD include a "scope" claim"',
  precondition: 'at least one JWT issued for a scope request in this run',
  records: "the token request for every non-empty subset, whose tokens' scope claims are compared",
  fix: "write the granted scopes into the JWT scope claim exactly as in the response's scope field",
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
    if (compared === 0) return notVerified('no scope request of this run got a token: no claim to compare');
    return judge(problems, [`${compared} tokens compared`]);
  },
});
