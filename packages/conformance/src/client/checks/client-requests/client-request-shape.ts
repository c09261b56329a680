import { mediaTypeOfValue as mediaType } from '../../../common/media-type.js';
import { clientFailed, clientNotVerified, clientPassed, defineClientCheck } from '../../check.js';
import type { RecordedExchange } from '../../session.js';
import { type ApiCall, line } from '../../view.js';

const integerAtLeast = (value: string | null, min: number) =>
  value === null || (/^\d+$/.test(value) && Number(value) >= min);

function apiProblem(call: ApiCall): string | undefined {
  const { exchange } = call;
  if (call.partnerId === undefined && call.operationId === undefined) return 'not a path of the API';
  if (call.operationId === undefined) return `${exchange.method} is not a method of this path`;
  if (exchange.method === 'POST') {
    if (mediaType(exchange.requestHeaders['content-type']) !== 'application/json')
      return `Content-Type ${JSON.stringify(exchange.requestHeaders['content-type'] ?? 'absent')}, not application/json`;
    if (exchange.body.kind !== 'json-object')
      return `a body that is not a JSON object (${exchange.body.kind})`;
    return undefined;
  }
  const query = new URLSearchParams(exchange.target.split('?')[1] ?? '');
  if (!integerAtLeast(query.get('limit'), 1))
    return `limit ${JSON.stringify(query.get('limit'))} is not an integer ≥ 1`;
  if (!integerAtLeast(query.get('offset'), 0))
    return `offset ${JSON.stringify(query.get('offset'))} is not an integer ≥ 0`;
  if (query.getAll('limit').length > 1 || query.getAll('offset').length > 1)
    return 'limit or offset given twice';
  return undefined;
}

function tokenProblem(exchange: RecordedExchange): string | undefined {
  const path = exchange.target.split('?')[0];
  if (path !== '/oauth/token') {
    if (exchange.method === 'GET' && path?.startsWith('/.well-known/')) return undefined;
    return 'not the token endpoint (POST /oauth/token)';
  }
  if (exchange.method !== 'POST') return `${exchange.method}, not POST`;
  if (mediaType(exchange.requestHeaders['content-type']) !== 'application/x-www-form-urlencoded')
    return `Content-Type ${JSON.stringify(exchange.requestHeaders['content-type'] ?? 'absent')}, not application/x-www-form-urlencoded`;
  const form = exchange.form;
  if (!form) return 'no form body';
  if (form.grantType !== 'client_credentials')
    return `grant_type ${JSON.stringify(form.grantType ?? 'absent')}, not client_credentials`;
  if (form.clientAuth === 'none') return 'no client credentials (form fields or HTTP Basic)';
  if (form.clientAuth === 'both')
    return 'client credentials sent twice, in the body and as HTTP Basic (RFC 6749 §2.3)';
  if (form.repeated.length > 0)
    return `parameters sent more than once: ${form.repeated.join(', ')} (RFC 6749 §3.2)`;
  return undefined;
}

export default defineClientCheck({
  id: 'client-request-shape',
  title: 'Every request matches the spec: method, path, content type, a JSON object body on creates',
  category: 'client-requests',
  severity: 'must',
  reference: 'API documentation §2.1, §4.1, §4.2; RFC 6749 §2.3, §3.2, §4.4.2',
  citation:
    '"Sent as application/x-www-form-urlencoded." and "grant_type … Always the value client_credentials." (Partner Lending API — Authentication and Access §2.1); "The client MUST NOT use more than one authentication method in each request." (RFC 6749 §2.3)',
  precondition: 'the journey sent at least one request to the stage',
  records:
    'every request: method and path against the spec, its content type and body kind; token requests: grant_type, client authentication, repeated parameters',
  fix: 'call only the documented paths with their methods; send creates as a JSON object with Content-Type: application/json, token requests as a form with grant_type=client_credentials',
  judge({ session, apiCalls }) {
    if (session.exchanges.length === 0) return clientNotVerified('the journey sent no request to the stage');
    const problems: Array<[RecordedExchange, string]> = [];
    for (const call of apiCalls) {
      const problem = apiProblem(call);
      if (problem) problems.push([call.exchange, problem]);
    }
    for (const exchange of session.exchanges)
      if (exchange.server === 'auth') {
        const problem = tokenProblem(exchange);
        if (problem) problems.push([exchange, problem]);
      }
    const bad = new Set(problems.map(([exchange]) => exchange));
    const evidence = [...bad, ...session.exchanges.filter((exchange) => !bad.has(exchange))];
    if (problems.length === 0)
      return clientPassed(
        `all ${session.exchanges.length} requests (${apiCalls.length} to the API) matched the spec`,
        evidence,
      );
    return clientFailed(
      `${problems.length} request${problems.length === 1 ? '' : 's'} did not match the spec:\n${problems
        .slice(0, 20)
        .map(([exchange, problem]) => `${line(exchange)}: ${problem}`)
        .join('\n')}`,
      evidence,
    );
  },
});
