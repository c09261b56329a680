import { scopes } from '@partner-lending/spec';
import { defineCheck, judge } from '../../check.js';
import { formatScopes, nonEmptySubsets, sameSet } from '../../scope-set.js';

/** The order of the requested scopes does not matter (RFC 6749 §3.3: order does not matter). */
export default defineCheck({
  id: 'scope-order',
  title: 'The order of requested scopes does not change what is granted',
  category: 'scope-intersection',
  severity: 'must',
  reference: 'RFC 6749 §3.3; seed §4.1 rule 1',
  async run(context) {
    const problems: string[] = [];
    const subsets = nonEmptySubsets(scopes).filter((subset) => subset.length > 1);
    await Promise.all(
      subsets.map(async (subset) => {
        const ascending = [...subset].sort();
        const descending = [...ascending].reverse();
        const [up, down] = await Promise.all([context.tokenFor(ascending), context.tokenFor(descending)]);
        const a = up.accessToken ? (up.granted ?? []) : undefined;
        const b = down.accessToken ? (down.granted ?? []) : undefined;
        const same =
          a === undefined || b === undefined ? up.exchange.status === down.exchange.status : sameSet(a, b);
        if (!same)
          problems.push(
            `asked ${formatScopes(ascending)} got ${a ? formatScopes(a) : context.describe(up.exchange)}, asked ${formatScopes(descending)} got ${b ? formatScopes(b) : context.describe(down.exchange)}`,
          );
      }),
    );
    return judge(problems, [`${subsets.length} subsets asked in two orders`]);
  },
});
