// A journey that sends its credentials in every encoding a client may use, and one wrong secret (as a
// production secret sent by mistake would be). The stage must keep none of them in any output.
const { PARTNER_TOKEN_URL: tokenUrl, PARTNER_BASE_URL: baseUrl, PARTNER_CLIENT_ID: id } = process.env;
const secret = process.env.PARTNER_CLIENT_SECRET;
const form = (fields) => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: fields,
});
// Every character percent-encoded, lowercase hex: more than any encoder must do.
const everyChar = (text) =>
  [...Buffer.from(text)].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');
const basic = `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

const answer = await fetch(tokenUrl, {
  ...form('grant_type=client_credentials&scope=read%3Aloans'),
  headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic },
});
const { access_token: token, partnerId } = await answer.json();
await fetch(
  tokenUrl,
  form(`grant_type=client_credentials&client_id=${everyChar(id)}&client_secret=${everyChar(secret)}`),
);
await fetch(
  tokenUrl,
  form(
    `grant_type=client_credentials&client_id=${id}&client_secret=production-secret-sent-by-mistake-0123456789`,
  ),
);
// The secret where it must never go: a query string (percent-encoded) and a Basic header to the API.
await fetch(`${baseUrl}/v3/partner/${partnerId}/loans?limit=1&key=${everyChar(secret)}`, {
  headers: { authorization: `Bearer ${token}` },
});
await fetch(`${baseUrl}/v3/partner/${partnerId}/loans?limit=1`, { headers: { authorization: basic } });
console.log('leaky journey done');
