import { API_CONTROL, defineCheck, notVerified } from '../../check.js';
import { algNoneToken, noneCasings } from '../../forgery/token-forger.js';
import { expectAllRefused } from '../helpers/refusal.js';

/** The same claims unsigned with alg "none" (in several casings) are refused. */
export default defineCheck({
  id: 'integrity-alg-none',
  title: 'An unsigned token (alg "none", any case) is refused',
  category: 'token-integrity',
  severity: 'must',
  reference: 'RFC 8725 §2.1, §3.1; RFC 9068 §4',
  citation: 'RFC 9068 §4: "The resource server MUST reject any JWT in which the value of "alg" is "none"."',
  precondition: API_CONTROL,
  records: 'GET loans with the token re-encoded as alg none in four casings; the positive control',
  fix: 'verify with an allow-list of algorithms (RS256) and refuse alg none in any case',
  async run(context) {
    const control = await context.apiControl();
    if (!control.ok) return notVerified(control.reason);
    const token = context.main.accessToken!;
    return expectAllRefused(
      context,
      noneCasings.map((casing) => [`alg "${casing}"`, algNoneToken(token, casing)] as const),
    );
  },
});
