import { scopes } from '@partner-lending/spec';
import { formatScopes, nonEmptySubsets, sameSet } from '../../../common/scope-set.js';
import { defineCheck, judge, notVerified } from '../../check.js';

/** The order of the requested scopes does not matter (RFC 6749 §3.3: order does not matter). */
export default defineCheck({
  id: 'scope-order',
  title: 'The order of requested scopes does not change what is granted',
  category: 'scope-intersection',
  severity: 'must',
  reference: 'RFC 6749 §3.3; API documentation §4.1 rule 1',
  citation:
    'RFC 6749 §3.3: "If the value contains multiple space-delimited strings, their order does not matter, and each string adds an additional access range to the requested scope."',
  precondition: 'at least one pair of requests (same scopes, two orders) got tokens',
  records: 'each multi-scope request in ascending and descending order',
  fix: 'treat the requested scope as a set: compare scopes by value, not by position',
  async run(context) {
    const problems: string[] = [];
    const subsets = nonEmptySubsets(scopes).filter((subset) => subset.length > 1);
    let pairs = 0;
    await Promise.all(
      subsets.map(async (subset) => {
        const ascending = [...subset].sort();
        const descending = [...ascending].reverse();
        const [up, down] = await Promise.all([context.tokenFor(ascending), context.tokenFor(descending)]);
        const a = up.accessToken ? (up.granted ?? []) : undefined;
        const b = down.accessToken ? (down.granted ?? []) : undefined;
        if (a !== undefined && b !== undefined) pairs += 1;
        const same =
          a === undefined || b === undefined ? up.exchange.status === down.exchange.status : sameSet(a, b);
        if (!same)
          problems.push(
            `asked ${formatScopes(ascending)} got ${a ? formatScopes(a) : context.describe(up.exchange)}, asked ${formatScopes(descending)} got ${b ? formatScopes(b) : context.describe(down.exchange)}`,
          );
      }),
    );
    if (problems.length === 0 && pairs === 0)
      return notVerified('no request of either order got a token: the grants were not compared');
    return judge(problems, [`${pairs} subsets granted in both orders compared`]);
  },
});
