import { defineCheck, judge } from '../../check.js';

/** The response partnerId names the partner the token is for (its partnerId claim). */
export default defineCheck({
  id: 'token-partner-id',
  title: 'The response partnerId equals the token partnerId claim',
  category: 'token-endpoint',
  severity: 'must',
  reference: 'API documentation §2.2, §4.2',
  citation:
    'Partner Lending API — Authentication and Access §4.2: "{partner_id} is the partner identifier (the partnerId of the token response)."',
  precondition: 'the preflight got a token (the run cannot start without one)',
  records: 'the preflight token answer (partnerId; the partnerId claim)',
  fix: "take the response's partnerId and the token's partnerId claim from the same partner record",
  async run(context) {
    const field = context.main.body?.partnerId;
    const claim = context.main.jwt?.payload.partnerId;
    if (typeof field !== 'string' || field.length === 0)
      return judge([`expected a partnerId string in the token response, got ${JSON.stringify(field)}`], []);
    if (claim === undefined)
      return judge([], [`partnerId ${field}; the token carries no partnerId claim to compare`]);
    return judge(
      claim === field
        ? []
        : [
            `expected the claim partnerId ${JSON.stringify(claim)}, the response says ${JSON.stringify(field)}`,
          ],
      [`partnerId ${field}`],
    );
  },
});
