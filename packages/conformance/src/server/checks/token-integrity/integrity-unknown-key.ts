import { API_CONTROL, defineCheck, notVerified } from '../../check.js';
import { unknownKeyToken } from '../../forgery/token-forger.js';
import { expectAllRefused } from '../helpers/refusal.js';

/** The same claims signed by a key the server never published (unknown kid) are refused. */
export default defineCheck({
  id: 'integrity-unknown-key',
  title: 'A token signed by an unknown key (unknown kid) is refused',
  category: 'token-integrity',
  severity: 'must',
  reference: 'RFC 9068 §4; RFC 7515 §4.1.4; RFC 8725 §3.1',
  citation:
    'RFC 9068 §4: "The resource server MUST validate the signature of all incoming JWT access tokens according to [RFC7515] using the algorithm specified in the JWT "alg" Header Parameter."',
  precondition: `${API_CONTROL}; a JWT`,
  records: 'GET loans with the token signed by an unknown key; the positive control',
  fix: 'verify only with keys of your own key set; refuse a token whose kid is not in it',
  async run(context) {
    const control = await context.apiControl();
    if (!control.ok) return notVerified(control.reason);
    return expectAllRefused(context, [
      ['signed by an unknown key', await unknownKeyToken(context.main.accessToken!)],
    ]);
  },
});
