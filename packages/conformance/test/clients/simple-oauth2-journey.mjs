// A partner journey built on simple-oauth2 (a client-credentials library this project did not write):
// its ClientCredentials grant with HTTP Basic client authentication (its default), the token reused
// until simple-oauth2 says it is about to expire, a new one on 401. Run under the certification stage.
import { ClientCredentials } from 'simple-oauth2';

const seconds = Number(process.env.JOURNEY_SECONDS ?? 5);
const auth = new URL(process.env.PARTNER_TOKEN_URL);
const client = new ClientCredentials({
  client: { id: process.env.PARTNER_CLIENT_ID, secret: process.env.PARTNER_CLIENT_SECRET },
  auth: { tokenHost: auth.origin, tokenPath: auth.pathname },
});
const params = { scope: 'read:loans', audience: process.env.PARTNER_AUDIENCE };
let accessToken = await client.getToken(params);

async function listLoans() {
  if (accessToken.expired(1)) accessToken = await client.getToken(params);
  const { access_token: token, partnerId } = accessToken.token;
  const url = `${process.env.PARTNER_BASE_URL}/v3/partner/${partnerId}/loans?limit=10`;
  return fetch(url, { headers: { authorization: `Bearer ${token}` } });
}

const end = Date.now() + seconds * 1000;
let calls = 0;
while (Date.now() < end) {
  let response = await listLoans();
  if (response.status === 401) {
    accessToken = await client.getToken(params);
    response = await listLoans();
  } else if (response.status === 429) {
    await new Promise((resolve) =>
      setTimeout(resolve, Number(response.headers.get('retry-after') ?? 1) * 1000),
    );
  }
  await response.arrayBuffer();
  calls += 1;
  await new Promise((resolve) => setTimeout(resolve, 300));
}
console.log(`simple-oauth2 journey: ${calls} calls`);
