import { scopes } from '@partner-lending/spec';
import { defineCheck } from '../../check.js';
import { tamperedPayloadToken } from '../../token-forger.js';
import { expectAllRefused } from './refusal.js';

/** The same signature over a changed payload (the scope claim widened) is refused. */
export default defineCheck({
  id: 'integrity-tampered-payload',
  title: 'A token whose payload was changed after signing is refused',
  category: 'token-integrity',
  severity: 'must',
  reference: 'RFC 7515 §5.2; RFC 9068 §4; RFC 8725 §3.1',
  async run(context) {
    return expectAllRefused(context, [
      ['payload with the scope claim widened', tamperedPayloadToken(context.main.accessToken!, scopes)],
    ]);
  },
});
