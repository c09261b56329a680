import { defineCheck, judge } from '../../check.js';
import { mediaTypeOf } from '../../http-probe.js';
import { documentedResponses, documentedStatus, operationOf } from '../../spec-responses.js';

/** Every answer of the run has a status, and a content type, that the spec documents for its operation. */
export default defineCheck({
  id: 'spec-documented-responses',
  title: 'Every response has a status and content type the spec documents',
  category: 'spec-conformance',
  severity: 'must',
  reference: 'spec/openapi.yaml (OpenAPI 3.1 Responses Object); seed §4',
  final: true,
  async run(context) {
    const problems = new Set<string>();
    let judged = 0;
    for (const exchange of context.exchanges) {
      const { method, url } = exchange.request;
      const id = operationOf(method, url, context.target);
      if (!id) continue;
      judged += 1;
      const key = documentedStatus(id, exchange.status);
      if (key === undefined) {
        problems.add(
          `${id}: status ${exchange.status} is not documented (documented: ${[...documentedResponses(id).keys()].join(', ')})`,
        );
        continue;
      }
      const types = documentedResponses(id).get(key)!;
      const type = mediaTypeOf(exchange.headers);
      if (exchange.text.length > 0 && (type === undefined || !types.has(type)))
        problems.add(
          `${id} ${exchange.status}: Content-Type ${type ?? 'none'} is not documented (documented: ${[...types].join(', ') || 'no body'})`,
        );
    }
    return judge([...problems], [`${judged} responses judged against the spec`]);
  },
});
