import type { CheckOutcome } from '../../check.js';
import { judge } from '../../check.js';
import type { CheckContext } from '../../context.js';
import { isSuccess } from '../../context.js';

/**
 * Sends each forged token to GET loans of the tested partner. Any 2xx means the forged token was
 * accepted: a failure. Any other answer is a refusal; one that is not 401 is noted (the status and error
 * code themselves are judged by bearer-invalid-token-error), and a 5xx is "refused with a server error"
 * (spec-no-server-errors reports it), never "accepted". The caller has checked that a valid token works
 * on the same route, so a refusal here means something.
 */
export async function expectAllRefused(
  context: CheckContext,
  forged: ReadonlyArray<readonly [label: string, token: string]>,
): Promise<CheckOutcome> {
  const problems: string[] = [];
  const notes: string[] = [];
  const exchanges = await Promise.all(forged.map(([, token]) => context.callApi('listLoans', { token })));
  exchanges.forEach((exchange, index) => {
    const label = forged[index]![0];
    if (isSuccess(exchange))
      problems.push(
        `${label}: ACCEPTED — expected a refusal (401 invalid_token), got ${context.describe(exchange)}`,
        context.curl(exchange),
      );
    else if (exchange.status >= 500)
      notes.push(
        `${label}: refused with a server error (${context.describe(exchange)}); expected 401 invalid_token`,
      );
    else if (exchange.status !== 401)
      notes.push(`${label}: refused with ${context.describe(exchange)} (RFC 6750 §3.1 recommends 401)`);
    else notes.push(`${label}: refused with 401`);
  });
  return judge(problems, notes);
}
