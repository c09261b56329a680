// A partner journey built on simple-oauth2 (a client-credentials library this project did not write):
// its ClientCredentials grant with HTTP Basic client authentication (its default), the token reused
// until simple-oauth2 says it is about to expire, a new one on 401. It asks for the scopes its client is
// authorised for (PARTNER_SCOPES, as the partner console says), reads the granted scope of each token
// answer (accessToken.token.scope; absent, it is what was asked: RFC 6749 §5.1) and, before an operation
// its token lacks, asks for a new token: never the operation called with a token lacking its scope. It
// lists loans and makes each authorised create until it succeeded once (a create answered 503 is never
// re-sent: a later round makes a new one). Run under the certification stage.
import { ClientCredentials } from 'simple-oauth2';

const seconds = Number(process.env.JOURNEY_SECONDS ?? 5);
const auth = new URL(process.env.PARTNER_TOKEN_URL);
const client = new ClientCredentials({
  client: { id: process.env.PARTNER_CLIENT_ID, secret: process.env.PARTNER_CLIENT_SECRET },
  auth: { tokenHost: auth.origin, tokenPath: auth.pathname },
});
const authorised = process.env.PARTNER_SCOPES?.trim() || 'read:loans';
const params = { scope: authorised, audience: process.env.PARTNER_AUDIENCE };
let accessToken = await client.getToken(params);
let notBefore = 0;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const granted = (scope) => ` ${accessToken.token.scope ?? authorised} `.includes(` ${scope} `);

/** One API call needing `scope`: its status, or 0 when the scope is not granted now (not called). */
async function call(method, path, scope, body) {
  for (let attempt = 1; attempt <= 3; attempt++) {
    await sleep(Math.max(0, notBefore - Date.now()));
    if (accessToken.expired(1)) accessToken = await client.getToken(params);
    if (!granted(scope)) accessToken = await client.getToken(params);
    if (!granted(scope)) return 0;
    const { access_token: token, partnerId } = accessToken.token;
    const response = await fetch(`${process.env.PARTNER_BASE_URL}/v3/partner/${partnerId}/${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body && { 'content-type': 'application/json' }),
      },
      ...(body && { body: JSON.stringify(body) }),
    });
    await response.arrayBuffer();
    if (response.status === 401 && attempt === 1) {
      accessToken = await client.getToken(params); // revoked: a new token, one retry
      continue;
    }
    if (response.status === 429 || response.status === 503) {
      notBefore = Date.now() + Number(response.headers.get('retry-after') ?? 1) * 1000;
      if (method === 'POST') return response.status; // a create is never sent twice
      continue;
    }
    return response.status;
  }
  return 0;
}

const pending = [
  ['loan_draft', 'create:loan_draft'],
  ['journals', 'create:journal_update'],
  ['repayments', 'create:repayment'],
].filter(([, scope]) => authorised.split(' ').includes(scope));
const end = Date.now() + seconds * 1000;
let calls = 0;
for (let round = 1; Date.now() < end; round++) {
  await call('GET', 'loans?limit=10', 'read:loans');
  calls += 1;
  for (const item of [...pending]) {
    const status = await call('POST', item[0], item[1], { amount: 1000 + round, currency: 'EUR' });
    calls += 1;
    if (status >= 200 && status < 300) pending.splice(pending.indexOf(item), 1);
  }
  await sleep(300);
}
console.log(`simple-oauth2 journey: ${calls} calls, ${pending.length} creates never succeeded`);
