import { defineCheck } from '../../check.js';
import { unknownKeyToken } from '../../token-forger.js';
import { expectAllRefused } from './refusal.js';

/** The same claims signed by a key the server never published (unknown kid) are refused. */
export default defineCheck({
  id: 'integrity-unknown-key',
  title: 'A token signed by an unknown key (unknown kid) is refused',
  category: 'token-integrity',
  severity: 'must',
  reference: 'RFC 9068 §4; RFC 7515 §4.1.4; RFC 8725 §3.1',
  async run(context) {
    return expectAllRefused(context, [
      ['signed by an unknown key', await unknownKeyToken(context.main.accessToken!)],
    ]);
  },
});
