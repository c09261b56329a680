import { API_CONTROL, defineCheck, judge, notVerified } from '../../check.js';

/** No request of the whole run got a 5xx: every bad input is the client's error, not the server's. */
export default defineCheck({
  id: 'spec-no-server-errors',
  title: 'No request of the run got a 5xx',
  category: 'spec-conformance',
  severity: 'should',
  reference: 'RFC 9110 §15.6; RFC 6750 §3.1',
  citation:
    'RFC 9110 §15.6: "The 5xx (Server Error) class of status code indicates that the server is aware that it has erred or is incapable of performing the requested method." (no RFC forbids it: should)',
  precondition: API_CONTROL,
  records: 'every answer of the run (the first 12 listed, the rest counted)',
  fix: 'find the 5xx in the evidence and handle that input: a malformed request is a 4xx',
  final: true,
  async run(context) {
    // What was seen counts either way; only a pass needs the API's positive control.
    const control = await context.apiControl();
    const problems: string[] = [];
    for (const exchange of context.exchanges) context.cite(exchange);
    for (const exchange of context.exchanges)
      if (exchange.status >= 500)
        problems.push(
          `${exchange.request.method} ${new URL(exchange.request.url).pathname}: ${context.describe(exchange)}\n${context.curl(exchange)}`,
        );
    if (problems.length === 0 && !control.ok) return notVerified(control.reason);
    return judge(
      problems.slice(0, 5).concat(problems.length > 5 ? [`… and ${problems.length - 5} more`] : []),
      [`${context.exchanges.length} responses, none 5xx`],
    );
  },
});
