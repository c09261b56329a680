import type { CheckOutcome } from '../../check.js';
import { judge } from '../../check.js';
import type { CheckContext } from '../../context.js';

/**
 * Sends each forged token to GET loans of the tested partner; every one must get 401 (RFC 6750 §3.1
 * invalid_token). The error code itself is judged by bearer-invalid-token-error.
 */
export async function expectAllRefused(
  context: CheckContext,
  forged: ReadonlyArray<readonly [label: string, token: string]>,
): Promise<CheckOutcome> {
  const problems: string[] = [];
  const exchanges = await Promise.all(forged.map(([, token]) => context.callApi('listLoans', { token })));
  exchanges.forEach((exchange, index) => {
    if (exchange.status !== 401)
      problems.push(
        `${forged[index]![0]}: expected 401 invalid_token, got ${context.describe(exchange)}`,
        context.curl(exchange),
      );
  });
  return judge(problems, [`${forged.map(([label]) => label).join(', ')}: refused with 401`]);
}
