import { sameUrl } from '../../../common/jwt.js';
import {
  clientFailed,
  clientNotVerified,
  clientPassed,
  defineClientCheck,
  offendersFirst,
} from '../../check.js';
import { line } from '../../view.js';

export default defineClientCheck({
  id: 'client-audience',
  title: 'The token request names the partner API as its audience (audience, or RFC 8707 resource)',
  category: 'client-scope',
  severity: 'should',
  reference: 'API documentation §2.1, §5.3; RFC 8707 §2',
  citation:
    '"audience … Identifies the API in which the token will be used: the base address of the partner API of the environment ({base_url})." and "The audience of the token is the partner API in which it is used." (Partner Lending API — Authentication and Access §2.1, §5.3); whether audience is required is not stated',
  precondition: 'the journey sent at least one token request',
  records: 'every token request: its audience and resource parameters against the partner API address',
  fix: 'send audience=<PARTNER_BASE_URL> (PARTNER_AUDIENCE) in every token request, so that the token is only good at the partner API',
  judge({ tokenRequests, session }) {
    if (tokenRequests.length === 0) return clientNotVerified('the journey sent no token request');
    const { audience, baseUrl } = session.stage;
    const names = (form: NonNullable<(typeof tokenRequests)[number]['form']>) =>
      (form.audience !== undefined && sameUrl(form.audience, audience)) ||
      form.resource.some((resource) => sameUrl(resource, baseUrl) || sameUrl(resource, audience));
    const bad = tokenRequests.filter((exchange) => !exchange.form || !names(exchange.form));
    const evidence = offendersFirst(bad, tokenRequests);
    if (bad.length === 0)
      return clientPassed(
        `all ${tokenRequests.length} token requests named the partner API (${audience})`,
        evidence,
      );
    return clientFailed(
      `${bad.length} of ${tokenRequests.length} token requests did not name the partner API ${audience}:\n${bad
        .slice(0, 10)
        .map(
          (exchange) =>
            `${line(exchange)}: audience ${exchange.form?.audience === undefined ? 'absent' : JSON.stringify(exchange.form.audience)}${exchange.form?.resource.length ? `, resource ${exchange.form.resource.join(' ')}` : ''}`,
        )
        .join('\n')}`,
      evidence,
    );
  },
});
