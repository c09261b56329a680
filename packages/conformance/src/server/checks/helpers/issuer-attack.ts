import type { CheckContext } from '../../context.js';
import { isSuccess } from '../../context.js';
import type { SuiteIssuer } from '../../forgery/suite-issuer.js';

/**
 * Sends a token made by the suite's own issuer to GET loans and says whether it was refused and whether
 * the target fetched the suite's metadata or key set meanwhile (evidence of a key lookup it should not do).
 */
export async function issuerAttack(
  context: CheckContext,
  label: string,
  attack: 'foreign-issuer' | 'jku',
  make: (issuer: SuiteIssuer, token: string) => Promise<string>,
): Promise<{ problems: string[]; notes: string[] } | { reason: string }> {
  const found = await context.issuer();
  if (!found.issuer) return { reason: found.reason };
  const { issuer } = found;
  const token = await make(issuer, context.main.accessToken!);
  const exchange = await context.callApi('listLoans', { token });
  const fetched = issuer.fetchesOf(attack);
  const fetchNote =
    fetched.length > 0
      ? `the target fetched the suite's ${[...new Set(fetched.map((hit) => hit.path))].join(', ')} at ${issuer.url}`
      : `the target did not fetch anything from the suite's issuer at ${issuer.url}`;
  if (isSuccess(exchange))
    return {
      problems: [
        `${label}: ACCEPTED — a token signed by the suite's own key (kid ${issuer.kid}) got ${context.describe(exchange)}; ${fetchNote}`,
        context.curl(exchange),
      ],
      notes: [],
    };
  const how =
    exchange.status >= 500
      ? `refused with a server error (${context.describe(exchange)})`
      : `refused with ${context.describe(exchange)}`;
  return { problems: [], notes: [`${label}: ${how}; ${fetchNote}`] };
}
