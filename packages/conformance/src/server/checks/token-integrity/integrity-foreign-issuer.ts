import { API_CONTROL, defineCheck, judge, notVerified } from '../../check.js';
import { issuerAttack } from '../helpers/issuer-attack.js';

/**
 * The same claims, `iss` set to the suite's own issuer (RFC 8414/OpenID metadata and a JWKS on a port of
 * its own), signed by that issuer's key. A resource server that looks up the signing keys from the
 * token's own `iss` (a JWKS helper wired without an issuer allow-list) accepts it.
 */
export default defineCheck({
  id: 'integrity-foreign-issuer',
  title: "A token from a foreign issuer (iss and key of the suite's own issuer) is refused",
  category: 'token-integrity',
  severity: 'must',
  reference: 'RFC 9068 §4; RFC 8725 §3.8, §3.10; RFC 8414 §3',
  citation:
    'RFC 9068 §4: "The issuer identifier for the authorization server (which is typically obtained during discovery) MUST exactly match the value of the "iss" claim."',
  precondition: `${API_CONTROL}; a JWT; the suite's issuer is reachable from the target (loopback, or --listen)`,
  records:
    "GET loans with the foreign-issuer token; whether the target fetched the suite's metadata or key set (in the details); the positive control",
  fix: "check iss against your one trusted issuer and take keys only from its configured key set, never from the token's iss",
  async run(context) {
    const control = await context.apiControl();
    if (!control.ok) return notVerified(control.reason);
    const attack = await issuerAttack(context, 'foreign issuer', 'foreign-issuer', (issuer, token) =>
      issuer.foreignIssuerToken(token),
    );
    if ('reason' in attack) return notVerified(attack.reason);
    return judge(attack.problems, attack.notes);
  },
});
