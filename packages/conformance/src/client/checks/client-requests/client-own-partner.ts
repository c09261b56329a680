import {
  clientFailed,
  clientNotVerified,
  clientPassed,
  defineClientCheck,
  offendersFirst,
} from '../../check.js';
import { line } from '../../view.js';

export default defineClientCheck({
  id: 'client-own-partner',
  title: 'Every call uses the partnerId of its token in the path',
  category: 'client-requests',
  severity: 'must',
  reference: 'API documentation §2.2, §4.2',
  citation:
    '"{partner_id} is the partner identifier (the partnerId of the token response)." (Partner Lending API — Authentication and Access §4.2)',
  precondition: 'the journey made at least one API call on a path of the spec with a token the stage issued',
  records: 'every API call: the {partner_id} of its path against the partnerId of the token it carried',
  fix: 'take the partner id from the partnerId field of the token answer (or the token), never from configuration or another partner',
  judge({ apiCalls }) {
    const judged = apiCalls.filter((call) => call.token !== undefined && call.partnerId !== undefined);
    if (judged.length === 0)
      return clientNotVerified(
        'the journey made no API call on a path of the spec with a token the stage issued',
      );
    const bad = judged.filter((call) => call.partnerId !== call.token!.partnerId);
    const evidence = offendersFirst(bad, judged).map((call) => call.exchange);
    if (bad.length === 0)
      return clientPassed(
        `all ${judged.length} calls used the partnerId of their token (${judged[0]!.token!.partnerId})`,
        evidence,
      );
    return clientFailed(
      `${bad.length} call${bad.length === 1 ? '' : 's'} used another partner's id:\n${bad
        .slice(0, 10)
        .map(
          (call) =>
            `${line(call.exchange)}: path partner ${JSON.stringify(call.partnerId)}, token partnerId ${JSON.stringify(call.token!.partnerId)}`,
        )
        .join('\n')}`,
      evidence,
    );
  },
});
