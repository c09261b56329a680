import { API_CONTROL, defineCheck, notVerified } from '../../check.js';
import { embeddedJwkToken } from '../../forgery/token-forger.js';
import { expectAllRefused } from '../helpers/refusal.js';

/** A token that carries its own verification key in the `jwk` header is refused. */
export default defineCheck({
  id: 'integrity-embedded-jwk',
  title: 'A token verified by a key embedded in its jwk header is refused',
  category: 'token-integrity',
  severity: 'must',
  reference: 'RFC 7515 §4.1.3; RFC 8725 §3.10; RFC 9068 §4',
  citation:
    'RFC 9068 §4: "The resource server MUST validate the signature of all incoming JWT access tokens …"; RFC 8725 §3.10: "Do Not Trust Received Claims"',
  precondition: `${API_CONTROL}; a JWT`,
  records: 'GET loans with the token carrying its own jwk; the positive control',
  fix: 'ignore a jwk in the token header: verify with keys from your own key set only',
  async run(context) {
    const control = await context.apiControl();
    if (!control.ok) return notVerified(control.reason);
    return expectAllRefused(context, [
      ['jwk header with the attacker key', await embeddedJwkToken(context.main.accessToken!)],
    ]);
  },
});
