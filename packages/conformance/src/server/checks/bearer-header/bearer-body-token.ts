import { operations } from '@partner-lending/spec';
import { API_CONTROL, defineCheck, judge, notVerified } from '../../check.js';
import { isSuccess } from '../../context.js';

/**
 * A token in a body field. RFC 6750 §2.2 lets a resource server honour the form-encoded `access_token`
 * (MAY): that is reported, never failed. No RFC defines a token in a JSON body, and the API documentation
 * has every call carry the header: honouring one is a `should` failure. Only create endpoints take a
 * body, so the check needs --allow-writes (a server that honours the token creates a draft).
 */
export default defineCheck({
  id: 'bearer-body-token',
  title: 'A token in a JSON body field is not honoured (a form field may be: RFC 6750 §2.2)',
  category: 'bearer-header',
  severity: 'should',
  reference: 'API documentation §4.2, §5.2; RFC 6750 §2.2',
  citation:
    'RFC 6750 §2.2: "Resource servers MAY support this method." (the form-encoded body parameter: honouring it is no failure); no RFC defines a token in a JSON body, and Partner Lending API — Authentication and Access §4.2: "Every call carries the header Authorization: Bearer <ACCESS_TOKEN>."',
  precondition: `${API_CONTROL}; --allow-writes (the only endpoints that take a body are the create endpoints)`,
  records:
    'POST loan_draft with the token in a form field and in a JSON field, no header (only with --allow-writes); the positive control',
  fix: 'ignore access_token in a JSON body; take the token from the Authorization header',
  async run(context) {
    const control = await context.apiControl();
    if (!control.ok) return notVerified(control.reason);
    if (!context.settings.allowWrites)
      return notVerified(
        'a token in a body needs a request with a body, and only the create endpoints take one: run with --allow-writes (a server that honours the token creates a loan draft)',
      );
    const id = 'createLoanDraft' as const;
    const token = context.main.accessToken!;
    const label = `${operations[id].method} ${operations[id].path} without a header`;
    const form = await context.callApi(id, { authorization: null, form: [['access_token', token]] });
    const body = await context.callApi(id, { authorization: null, json: { access_token: token } });
    const problems: string[] = [];
    const notes: string[] = [];
    if (isSuccess(form))
      notes.push(
        `note: the token in a form field was honoured (${context.describe(form)}); RFC 6750 §2.2 allows it (MAY), so this is no failure`,
      );
    else notes.push(`the token in a form field: ${context.describe(form)}`);
    // Judged on the fact the check names: the token in a JSON field honoured (2xx).
    if (isSuccess(body))
      problems.push(
        `${label}, the token in a JSON field: expected 401, got ${context.describe(body)}`,
        context.curl(body),
      );
    else
      notes.push(
        `the token in a JSON field: not honoured, ${context.describe(body)}${body.status >= 500 ? ' (a server error, judged by spec-no-server-errors)' : ''}`,
      );
    return judge(problems, notes);
  },
});
