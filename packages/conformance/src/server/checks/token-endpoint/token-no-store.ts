import { defineCheck, judge } from '../../check.js';

/** Token answers must not be cached: Cache-Control: no-store. */
export default defineCheck({
  id: 'token-no-store',
  title: 'Token answers carry Cache-Control: no-store',
  category: 'token-endpoint',
  severity: 'must',
  reference: 'RFC 6749 §5.1',
  citation:
    'RFC 6749 §5.1: "The authorization server MUST include the HTTP "Cache-Control" response header field with a value of "no-store" in any response containing tokens, credentials, or other sensitive information"',
  precondition: 'the preflight got a token (the run cannot start without one)',
  records: 'the preflight token answer (its Cache-Control header)',
  fix: 'send Cache-Control: no-store (and Pragma: no-cache) with every token answer (RFC 6749 §5.1)',
  async run(context) {
    const { exchange } = context.main;
    const header = exchange.headers.get('cache-control');
    const directives = (header ?? '').split(',').map((item) => item.trim().toLowerCase());
    const problems = directives.includes('no-store')
      ? []
      : [
          `expected Cache-Control: no-store on the 200 token answer, got ${header === null ? 'no Cache-Control' : JSON.stringify(header)}`,
          context.curl(exchange),
        ];
    return judge(problems, [`Cache-Control: ${header}`]);
  },
});
