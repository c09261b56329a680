import { mediaTypeOf } from '../../../common/media-type.js';
import { documentedResponses, documentedStatus, operationOf } from '../../../common/spec-responses.js';
import { API_CONTROL, defineCheck, judge, notVerified } from '../../check.js';

/**
 * Every answer of the run has a status the spec documents for its operation, and a content type the spec
 * documents where a rule fixes it: the token endpoint's answers (JSON, RFC 6749 §5.1–5.2) and the API's
 * 2xx answers. API error bodies are left open by the API documentation (§7), so their content type is
 * not judged (an HTML 401 from a framework is no failure).
 */
export default defineCheck({
  id: 'spec-documented-responses',
  title: 'Every response has a status and content type the spec documents',
  category: 'spec-conformance',
  severity: 'must',
  reference: 'spec/openapi.yaml (OpenAPI 3.1 Responses Object); API documentation §4',
  citation:
    'OpenAPI 3.1 Responses Object: the spec documents each status an operation answers; bodies the API documentation leaves open (§7: "Error status codes, error codes and error bodies: not shown.") are not judged',
  precondition: `at least one API response of this run was judged, and ${API_CONTROL}`,
  records: 'every answer of the run from a documented operation (the first 12 listed, the rest counted)',
  fix: 'answer with the statuses and content types the spec documents for each operation (application/json)',
  final: true,
  async run(context) {
    // What was seen counts either way; only a pass needs the API's positive control.
    const control = await context.apiControl();
    const problems = new Set<string>();
    let judged = 0;
    let api = 0;
    for (const exchange of context.exchanges) {
      const { method, url } = exchange.request;
      const id = operationOf(method, url, context.target);
      if (!id) continue;
      judged += 1;
      if (id !== 'requestToken') api += 1;
      context.cite(exchange);
      const key = documentedStatus(id, exchange.status);
      if (key === undefined) {
        problems.add(
          `${id}: status ${exchange.status} is not documented (documented: ${[...documentedResponses(id).keys()].join(', ')})`,
        );
        continue;
      }
      const types = documentedResponses(id).get(key)!;
      const type = mediaTypeOf(exchange.headers);
      const fixed = id === 'requestToken' || (exchange.status >= 200 && exchange.status < 300);
      if (fixed && exchange.text.length > 0 && (type === undefined || !types.has(type)))
        problems.add(
          `${id} ${exchange.status}: Content-Type ${type ?? 'none'} is not documented (documented: ${[...types].join(', ') || 'no body'})`,
        );
    }
    if (problems.size === 0 && !control.ok) return notVerified(control.reason);
    if (problems.size === 0 && api === 0)
      return notVerified('no answer of this run came from a documented API operation (is --base-url right?)');
    return judge([...problems], [`${judged} responses judged against the spec (${api} from the API)`]);
  },
});
