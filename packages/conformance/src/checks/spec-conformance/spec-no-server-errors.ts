import { defineCheck, judge } from '../../check.js';

/** No request of the whole run got a 5xx: every bad input is the client's error, not the server's. */
export default defineCheck({
  id: 'spec-no-server-errors',
  title: 'No request of the run got a 5xx',
  category: 'spec-conformance',
  severity: 'must',
  reference: 'RFC 9110 §15.6; RFC 6750 §3.1',
  final: true,
  async run(context) {
    const problems: string[] = [];
    for (const exchange of context.exchanges)
      if (exchange.status >= 500)
        problems.push(
          `${exchange.request.method} ${new URL(exchange.request.url).pathname}: ${context.describe(exchange)}\n${context.curl(exchange)}`,
        );
    return judge(
      problems.slice(0, 5).concat(problems.length > 5 ? [`… and ${problems.length - 5} more`] : []),
      [`${context.exchanges.length} responses, none 5xx`],
    );
  },
});
