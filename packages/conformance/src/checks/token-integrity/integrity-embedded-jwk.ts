import { defineCheck } from '../../check.js';
import { embeddedJwkToken } from '../../token-forger.js';
import { expectAllRefused } from './refusal.js';

/** A token that carries its own verification key in the `jwk` header is refused. */
export default defineCheck({
  id: 'integrity-embedded-jwk',
  title: 'A token verified by a key embedded in its jwk header is refused',
  category: 'token-integrity',
  severity: 'must',
  reference: 'RFC 7515 §4.1.3; RFC 8725 §3.10; RFC 9068 §4',
  async run(context) {
    return expectAllRefused(context, [
      ['jwk header with the attacker key', await embeddedJwkToken(context.main.accessToken!)],
    ]);
  },
});
