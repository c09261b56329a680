// A partner journey built on @badgateway/oauth2-client 3 (a client-credentials library this project did
// not write) through its fetch wrapper, OAuth2Fetch, at its defaults: an OAuth2Client given the token
// endpoint (no discovery document is served) and the client's secret, so HTTP Basic client authentication
// (the library's default, its "interop" encoding); OAuth2Fetch's getNewToken asks for a client-credentials
// token (the audience as an extra parameter), and OAuth2Fetch does the rest as it does by default: one
// token request at a time, the token reused until its expiresAt (expires_in from the answer) has passed,
// and on a 401 a new token and the request sent once more (the refused token replaced: never sent again).
// What OAuth2Fetch does not do, the journey does as a careful partner would: it asks for the scopes its
// client is authorised for (PARTNER_SCOPES, as the partner console says), reads the granted scope of each
// token (token.scope; absent, it is what was asked: RFC 6749 §5.1) and, before an operation its token
// lacks, forces a new token (refreshToken()): never the operation called with a token lacking its scope;
// after a 429 or 503 no call of any operation before its Retry-After; a create answered 503 is never
// re-sent (a later round makes a new one). It lists loans (two at once first: OAuth2Fetch's single token
// request shows) and makes each authorised create until it succeeded once. Run under the certification
// stage. FAULT=ignore-scope never reads the granted scope (creates with the narrowed token). (No
// keep-revoked fault here: OAuth2Fetch itself replaces a token answered 401.)
import { OAuth2Client, OAuth2Fetch } from '@badgateway/oauth2-client';

const fault = process.env.FAULT ?? '';
const seconds = Number(process.env.JOURNEY_SECONDS ?? 5);
const baseUrl = process.env.PARTNER_BASE_URL;
const authorised = process.env.PARTNER_SCOPES?.trim() || 'read:loans';
const oauth2 = new OAuth2Client({
  tokenEndpoint: process.env.PARTNER_TOKEN_URL,
  clientId: process.env.PARTNER_CLIENT_ID,
  clientSecret: process.env.PARTNER_CLIENT_SECRET,
});
const fetcher = new OAuth2Fetch({
  client: oauth2,
  getNewToken: () =>
    oauth2.clientCredentials({
      scope: authorised.split(' '),
      extraParams: { audience: process.env.PARTNER_AUDIENCE },
    }),
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const granted = (token, scope) => (token.scope ?? authorised.split(' ')).includes(scope);
let notBefore = 0;

/** One API call needing `scope`: its status, or 0 when the scope is not granted now (not called). */
async function call(method, path, scope, body) {
  for (let attempt = 1; attempt <= 3; attempt++) {
    await sleep(Math.max(0, notBefore - Date.now()));
    let token = await fetcher.getToken();
    if (fault !== 'ignore-scope' && !granted(token, scope)) {
      token = await fetcher.refreshToken();
      if (!granted(token, scope)) return 0;
    }
    const response = await fetcher.fetch(`${baseUrl}/v3/partner/${token.extraParams?.partnerId}/${path}`, {
      method,
      headers: { accept: 'application/json', ...(body && { 'content-type': 'application/json' }) },
      ...(body && { body: JSON.stringify(body) }),
    });
    await response.arrayBuffer();
    if (response.status === 429 || response.status === 503) {
      notBefore = Math.max(notBefore, Date.now() + Number(response.headers.get('retry-after') ?? 1) * 1000);
      if (method === 'POST') return response.status; // a create is never sent twice
      continue;
    }
    return response.status;
  }
  return 0;
}

let calls = 0;
await Promise.all([
  call('GET', 'loans?limit=5', 'read:loans'),
  call('GET', 'loans?limit=5&offset=5', 'read:loans'),
]);
calls += 2;
const pending = [
  ['loan_draft', 'create:loan_draft'],
  ['journals', 'create:journal_update'],
  ['repayments', 'create:repayment'],
].filter(([, scope]) => authorised.split(' ').includes(scope));
const end = Date.now() + seconds * 1000;
for (let round = 1; Date.now() < end; round++) {
  for (const item of [...pending]) {
    const status = await call('POST', item[0], item[1], { amount: 1000 + round, currency: 'EUR' });
    calls += 1;
    if (status >= 200 && status < 300) pending.splice(pending.indexOf(item), 1);
  }
  await call('GET', 'loans?limit=10', 'read:loans');
  calls += 1;
  await sleep(300);
}
console.log(
  `OAuth2Fetch journey${fault ? ` (fault: ${fault})` : ''}: ${calls} calls, ${pending.length} creates never succeeded`,
);
