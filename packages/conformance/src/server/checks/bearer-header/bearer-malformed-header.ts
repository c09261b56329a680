import { API_CONTROL, defineCheck, judge, notVerified } from '../../check.js';

/**
 * Malformed Authorization values: each must get a 4xx, never a 5xx, and never a 2xx — except a value that
 * still carries the whole valid token (`Bearer <token> extra`), whose acceptance is lenient parsing of a
 * real credential (common middleware splits on the space), reported as a note. The long one stays
 * at 4 KiB, under the header limits of common servers and proxies (8 KiB), which would answer 431.
 */
export function malformedValues(token: string): string[] {
  return [
    'Bearer',
    'Bearer  ',
    `Bearer ${token} extra`,
    `Bearer ${token},${token}`,
    'Bearer ====',
    'Bearer eyJ.eyJ.',
    'Bearer ...',
    `Bearer "${token}"`,
    `Bearer ${'A'.repeat(4 * 1024)}`,
    `Bearer ${token.split('.').slice(0, 2).join('.')}`,
    ',',
    'Bearer realm="x"',
  ];
}

export default defineCheck({
  id: 'bearer-malformed-header',
  title: 'Malformed Authorization headers get a 4xx, never a 5xx',
  category: 'bearer-header',
  severity: 'must',
  reference: 'RFC 6750 §2.1, §3.1; RFC 9110 §11.6.2, §15.5',
  citation:
    'RFC 6750 §3: "… does not contain an access token that enables access to the protected resource, the resource server MUST include the HTTP "WWW-Authenticate" response header field"',
  precondition: API_CONTROL,
  records: 'GET loans with each malformed Authorization value; the positive control',
  fix: 'parse the Authorization header defensively and answer anything that is not Bearer <b64token> 400 or 401, never 5xx',
  async run(context) {
    const control = await context.apiControl();
    if (!control.ok) return notVerified(control.reason);
    const values = malformedValues(context.main.accessToken!);
    const exchanges = await Promise.all(
      values.map((authorization) => context.callApi('listLoans', { authorization })),
    );
    const problems: string[] = [];
    const notes: string[] = [];
    const token = context.main.accessToken!;
    exchanges.forEach((exchange, index) => {
      const value = values[index]!;
      const shown = JSON.stringify(
        context.redactor.redact(value.length > 80 ? `${value.slice(0, 40)}… (${value.length} chars)` : value),
      );
      // A value that still carries the whole valid token, accepted: lenient parsing, not a forged access.
      if (exchange.status >= 200 && exchange.status < 300 && value.includes(token))
        notes.push(
          `note: Authorization ${shown} was accepted (${exchange.status}): lenient parsing of a header that carries the valid token`,
        );
      else if (exchange.status < 400 || exchange.status >= 500)
        problems.push(
          `Authorization ${shown}: expected 4xx, got ${exchange.status >= 500 ? 'a server error: ' : ''}${context.describe(exchange)}`,
          context.curl(exchange),
        );
    });
    const statuses = [...new Set(exchanges.map((exchange) => exchange.status))].join(', ');
    return judge(problems, [`${values.length} malformed values answered ${statuses}`, ...notes]);
  },
});
