import {
  clientFailed,
  clientNotVerified,
  clientPassed,
  defineClientCheck,
  offendersFirst,
} from '../../check.js';
import { line } from '../../view.js';

export default defineClientCheck({
  id: 'client-bearer-header',
  title: 'Every API call carries Authorization: Bearer <token> with a token the stage issued',
  category: 'client-credentials',
  severity: 'must',
  reference: 'API documentation §4.2, §5.2; RFC 6750 §2.1',
  citation:
    '"Every call carries the header Authorization: Bearer <ACCESS_TOKEN>." (Partner Lending API — Authentication and Access §4.2)',
  precondition: 'the journey made at least one call to the partner API',
  records:
    'every API call: its Authorization scheme, whether the value is a well-formed b64token, which issued token it is',
  fix: 'send the access_token of the token answer on every call as "Authorization: Bearer <token>" (one space, the token unchanged); the scheme name is case-insensitive',
  judge({ apiCalls }) {
    if (apiCalls.length === 0) return clientNotVerified('the journey made no call to the partner API');
    const bad = apiCalls.filter(({ exchange }) => {
      const bearer = exchange.bearer;
      return !bearer?.wellFormed || bearer.unknownToken === true;
    });
    const why = bad.map(({ exchange }) => {
      const bearer = exchange.bearer;
      const reason = !bearer
        ? 'no Authorization header'
        : bearer.scheme.toLowerCase() !== 'bearer'
          ? `the ${bearer.scheme} scheme, not Bearer`
          : !bearer.wellFormed
            ? 'a value that is not Bearer <b64token>'
            : 'a bearer token this stage never issued';
      return `${line(exchange)}: ${reason}`;
    });
    const evidence = offendersFirst(bad, apiCalls).map((call) => call.exchange);
    return bad.length > 0
      ? clientFailed(
          `${bad.length} of ${apiCalls.length} API calls without a valid bearer header:\n${why.slice(0, 20).join('\n')}`,
          evidence,
        )
      : clientPassed(
          `all ${apiCalls.length} API calls carried Authorization: Bearer with a token the stage issued`,
          evidence,
        );
  },
});
