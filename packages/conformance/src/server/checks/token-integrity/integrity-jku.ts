import { API_CONTROL, defineCheck, judge, notVerified } from '../../check.js';
import { issuerAttack } from '../helpers/issuer-attack.js';

/**
 * The same claims signed by the suite's own issuer's key, with a `jku` header naming that issuer's key
 * set (served on a port of the suite's own, so a target that follows `jku` really finds the key).
 */
export default defineCheck({
  id: 'integrity-jku',
  title: 'A token naming its own key set in a jku header is refused',
  category: 'token-integrity',
  severity: 'must',
  reference: 'RFC 7515 §4.1.2; RFC 8725 §3.10; RFC 9068 §4',
  citation:
    'RFC 9068 §4: "The resource server MUST validate the signature of all incoming JWT access tokens …"; RFC 8725 §3.10: blindly following a "jku" header "could result in server-side request forgery (SSRF) attacks"',
  precondition: `${API_CONTROL}; a JWT; the suite's issuer is reachable from the target (loopback, or --listen)`,
  records:
    "GET loans with the jku token; whether the target fetched the suite's key set (in the details); the positive control",
  fix: 'ignore jku (and x5u) in the token header: never fetch keys from an address the token names',
  async run(context) {
    const control = await context.apiControl();
    if (!control.ok) return notVerified(control.reason);
    const attack = await issuerAttack(context, 'jku header', 'jku', (issuer, token) =>
      issuer.jkuToken(token),
    );
    if ('reason' in attack) return notVerified(attack.reason);
    return judge(attack.problems, attack.notes);
  },
});
