import { defineCheck } from '../../check.js';
import { algNoneToken, noneCasings } from '../../token-forger.js';
import { expectAllRefused } from './refusal.js';

/** The same claims unsigned with alg "none" (in several casings) are refused. */
export default defineCheck({
  id: 'integrity-alg-none',
  title: 'An unsigned token (alg "none", any case) is refused',
  category: 'token-integrity',
  severity: 'must',
  reference: 'RFC 8725 §2.1, §3.1; RFC 9068 §4',
  async run(context) {
    const token = context.main.accessToken!;
    return expectAllRefused(
      context,
      noneCasings.map((casing) => [`alg "${casing}"`, algNoneToken(token, casing)] as const),
    );
  },
});
