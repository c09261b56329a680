// The bench's load: the journeys, in a process of their own (as the partners' programs are), so that
// the latency they measure is the server's and the network's, not their own process's. Reads the runs
// (a JSON array of {tokenUrl, baseUrl, clientId, clientSecret}) on stdin; writes, on stdout, one JSON
// line: each journey's latencies (ms) of API calls and of token requests, the number of calls answered,
// and the calls answered with a status other than 200, by status.
import { text } from 'node:stream/consumers';

const seconds = Number(process.env.BENCH_SECONDS ?? 30);
const rate = Number(process.env.BENCH_RATE ?? 10); // calls per second per journey
const spreadMs = 5000;

/** One journey: a token (renewed a second before it expires, as a client library would), then a call
 * every 1/rate s for `seconds`; every call's latency in ms, token requests included. */
async function journey(env) {
  const latencies = { api: [], token: [] };
  const refused = {};
  let answered = 0;
  /** Times a call and counts it; a status other than 200 is counted by status. */
  async function call(kind, url, init) {
    const started = performance.now();
    const response = await fetch(url, init);
    const body = await response.arrayBuffer();
    latencies[kind].push(performance.now() - started);
    answered += 1;
    if (response.status !== 200) refused[response.status] = (refused[response.status] ?? 0) + 1;
    return { response, body };
  }
  let token;
  let renewAt = 0;
  async function renew() {
    const started = performance.now();
    const { body } = await call('token', env.tokenUrl, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: env.clientId,
        client_secret: env.clientSecret,
        scope: 'read:loans',
      }),
    });
    token = JSON.parse(Buffer.from(body).toString('utf8'));
    renewAt = started + Math.max(500, (token.expires_in - 1) * 1000);
  }
  // Independent programs start at independent times: spread over one short token lifetime (the
  // stage's default is 5 s), so that their renewals do not all fall in the same millisecond.
  await new Promise((resolve) => setTimeout(resolve, Math.random() * spreadMs));
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    const started = performance.now();
    if (started >= renewAt) await renew();
    const { response } = await call('api', `${env.baseUrl}/v3/partner/${token.partnerId}/loans?limit=5`, {
      headers: { authorization: `Bearer ${token.access_token}` },
    });
    if (response.status === 401) renewAt = 0;
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, 1000 / rate - (performance.now() - started))),
    );
  }
  return { latencies, answered, refused };
}

const runs = JSON.parse(await text(process.stdin));
process.stdout.write(`${JSON.stringify(await Promise.all(runs.map(journey)))}\n`);
