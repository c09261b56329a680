import { scopes } from '@partner-lending/spec';
import { API_CONTROL, defineCheck, notVerified } from '../../check.js';
import { tamperedPayloadToken } from '../../forgery/token-forger.js';
import { expectAllRefused } from '../helpers/refusal.js';

/** The same signature over a changed payload (the scope claim widened) is refused. */
export default defineCheck({
  id: 'integrity-tampered-payload',
  title: 'A token whose payload was changed after signing is refused',
  category: 'token-integrity',
  severity: 'must',
  reference: 'RFC 7515 §5.2; RFC 9068 §4; RFC 8725 §3.1',
  citation:
    'RFC 9068 §4: "The resource server MUST validate the signature of all incoming JWT access tokens according to [RFC7515] using the algorithm specified in the JWT "alg" Header Parameter."',
  precondition: `${API_CONTROL}; a JWT`,
  records: 'GET loans with the tampered token; the positive control',
  fix: 'verify the signature over the exact header and payload received before reading any claim',
  async run(context) {
    const control = await context.apiControl();
    if (!control.ok) return notVerified(control.reason);
    return expectAllRefused(context, [
      ['payload with the scope claim widened', tamperedPayloadToken(context.main.accessToken!, scopes)],
    ]);
  },
});
