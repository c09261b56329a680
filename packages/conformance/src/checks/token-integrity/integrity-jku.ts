import { defineCheck } from '../../check.js';
import { attackerJku, jkuToken } from '../../token-forger.js';
import { expectAllRefused } from './refusal.js';

/** A token whose `jku` header points at the attacker's key set is refused. */
export default defineCheck({
  id: 'integrity-jku',
  title: 'A token naming its own key set in a jku header is refused',
  category: 'token-integrity',
  severity: 'must',
  reference: 'RFC 7515 §4.1.2; RFC 8725 §3.10; RFC 9068 §4',
  async run(context) {
    return expectAllRefused(context, [[`jku ${attackerJku}`, await jkuToken(context.main.accessToken!)]]);
  },
});
