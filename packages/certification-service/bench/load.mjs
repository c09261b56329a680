// The bench's load: journeys in a process of their own (as the partners' programs are), so that what
// they measure is the server's time and the network's, not their own process's. Reads one JSON object
// on stdin and writes one JSON line on stdout.
//
// Input: {mode, runs: [{tokenUrl, baseUrl, clientId, clientSecret}], seconds, ...}
// - mode "throughput": the first run only, `inFlight` calls always in flight (a new one as each is
//   answered) for `seconds`: calls answered per second. Output {calls, seconds, perSecond, statuses}.
// - mode "sequence": the first run only, `count` requests one at a time, token requests (`what`
//   "token") or API calls (`what` "call"). Output {statuses}.
// - mode "open": every run, `rate` calls per second each, at fixed times whatever the answers (an
//   open loop: a slow answer does not delay the next call, so queueing is measured, not hidden);
//   latency is counted from the time the call was meant to be sent. `start` "together" starts every
//   run at the same instant; "spread" starts them evenly over `spreadMs` (one short token lifetime).
//   Output: per run {api: [ms], quiet: [ms], token: [ms], answered, statuses, refusals} (`refusals`: the
//   calls refused 401 by the reason their answers give; `quiet`: the latencies
//   of the calls that no token request of any run overlapped); with `trace`, also `traced`: each
//   call's [intended time in ms from the start, latency in ms, status].
// A run may carry `origins` (several service instances sharing one database): its requests then go to
// each in turn (the first to the first, the next to the second, …), as a load balancer without affinity
// sends them, the path kept.
// Both modes take a token first, renew it a second before it expires (as a client library would) and
// at once when a call is answered 401 (the plan's revocation) with the token still in use (a 401 for a
// token already replaced renews nothing, as the SDK does); the calls meant to go out while a token is
// being fetched wait for it, and that wait counts.
import { Agent, request as httpRequest } from 'node:http';
import { text } from 'node:stream/consumers';

const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY, maxFreeSockets: 1024 });

/** One HTTP request: its status and its body as text. */
function request(url, { method = 'GET', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers, agent }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** `url` sent to the run's next instance in turn when it has several (`origins`), else as it is. */
function nextOrigin(env) {
  if (!env.origins || env.origins.length < 2) return (url) => url;
  let turn = 0;
  return (url) => {
    const origin = env.origins[turn++ % env.origins.length];
    const parsed = new URL(url);
    return `${origin}${parsed.pathname}${parsed.search}`;
  };
}

/** A run's token request body (client credentials in the form, `read:loans`). */
const tokenForm = (env) =>
  new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: env.clientId,
    client_secret: env.clientSecret,
    scope: 'read:loans',
  }).toString();
const formHeaders = { 'content-type': 'application/x-www-form-urlencoded' };

/**
 * Token requests of every run of this process: how many were sent, and how many await their answer (a
 * call with none in flight from its intended time to its answer shared the server with no token
 * request: see `quiet` in the open loop).
 */
const tokenRequests = { sent: 0, inFlight: 0 };

/** A run's tokens: fetched once at a time, renewed a second before expiry or once refused. */
function tokens(env, onToken) {
  const form = tokenForm(env);
  let current; // {value, partnerId, renewAt}
  let pending;
  async function fetchToken(intended) {
    for (let attempt = 0; attempt < 20; attempt += 1) {
      tokenRequests.sent += 1;
      tokenRequests.inFlight += 1;
      const answer = await request(env.at(env.tokenUrl), {
        method: 'POST',
        headers: formHeaders,
        body: form,
      }).finally(() => {
        tokenRequests.inFlight -= 1;
      });
      onToken(performance.now() - intended, answer.status);
      if (answer.status === 200) {
        const token = JSON.parse(answer.body);
        return {
          value: token.access_token,
          partnerId: token.partnerId,
          renewAt: performance.now() + Math.max(500, (token.expires_in - 1) * 1000),
        };
      }
      intended = performance.now();
    }
    throw new Error(`the token endpoint ${env.tokenUrl} refused 20 requests in a row`);
  }
  const renew = (intended) => {
    pending ??= fetchToken(intended).then(
      (token) => {
        current = token;
        pending = undefined;
        return token;
      },
      (error) => {
        pending = undefined;
        throw error;
      },
    );
    return pending;
  };
  return {
    /** The token to send now: the current one (renewal started in the background when due), or the next. */
    async get(intended) {
      if (!current) return renew(intended);
      if (performance.now() >= current.renewAt) void renew(intended).catch(() => {});
      return current;
    },
    /**
     * A call with `token` was refused 401: the next calls wait for a new one. A call that went out with a
     * token already replaced (refused after the new one came) renews nothing, as the SDK's
     * `invalidate(token)` drops the cached token only if it is the one refused.
     */
    refused(token, intended) {
      if (current === token) current = undefined;
      if (current !== undefined) return Promise.resolve(current);
      return renew(intended);
    },
  };
}

const count = (statuses, status) => {
  statuses[status] = (statuses[status] ?? 0) + 1;
};

/** Why a call was refused 401, as its answer says (`error_description`, cut), to tell expiry from revocation. */
const refusalReason = (body) => {
  try {
    return String(JSON.parse(body).error_description ?? 'no description').slice(0, 60);
  } catch {
    return 'not JSON';
  }
};

/** One run, `inFlight` calls at a time for `seconds`. */
async function throughput(env, { seconds, inFlight }) {
  const statuses = {};
  const run = tokens(env, (_, status) => count(statuses, `token ${status}`));
  await run.get(performance.now());
  let calls = 0;
  const started = performance.now();
  const end = started + seconds * 1000;
  async function worker() {
    while (performance.now() < end) {
      const sent = performance.now();
      const token = await run.get(sent);
      const answer = await request(env.at(`${env.baseUrl}/v3/partner/${token.partnerId}/loans?limit=5`), {
        headers: { authorization: `Bearer ${token.value}` },
      });
      calls += 1;
      count(statuses, answer.status);
      if (answer.status === 401) await run.refused(token, performance.now());
    }
  }
  await Promise.all(Array.from({ length: inFlight }, worker));
  const elapsed = (performance.now() - started) / 1000;
  return { calls, seconds: elapsed, perSecond: calls / elapsed, statuses };
}

/**
 * The first run, `count` requests one at a time: token requests (`what` "token"), or API calls with a
 * token renewed when due or refused (`what` "call"). What the server spends on one request shows
 * without any queueing.
 */
async function sequence(env, { what, count: total }) {
  const statuses = {};
  if (what === 'token') {
    const form = tokenForm(env);
    for (let index = 0; index < total; index += 1)
      count(
        statuses,
        (await request(env.at(env.tokenUrl), { method: 'POST', headers: formHeaders, body: form })).status,
      );
    return { statuses };
  }
  const run = tokens(env, (_, status) => count(statuses, `token ${status}`));
  for (let index = 0; index < total; index += 1) {
    const token = await run.get(performance.now());
    const answer = await request(env.at(`${env.baseUrl}/v3/partner/${token.partnerId}/loans?limit=5`), {
      headers: { authorization: `Bearer ${token.value}` },
    });
    count(statuses, answer.status);
    if (answer.status === 401) await run.refused(token, performance.now());
  }
  return { statuses };
}

/** Every run at `rate` calls per second, open loop, from `startAt` (+ its offset when spread). */
function openLoop(env, { seconds, rate, startAt, t0, trace }) {
  const api = [];
  /** The latencies of the calls that no token request (of any run) overlapped. */
  const quiet = [];
  /** With `trace`: each call's intended time (ms from the start), its latency and its status. */
  const traced = [];
  const token = [];
  const statuses = {};
  /** The calls refused 401, by the reason their answers give. */
  const refusals = {};
  let answered = 0;
  const run = tokens(env, (latency, status) => {
    token.push(latency);
    answered += 1;
    if (status !== 200) count(statuses, `token ${status}`);
  });
  const total = Math.round(seconds * rate);
  const calls = [];
  for (let k = 0; k < total; k += 1) {
    const intended = startAt + (k * 1000) / rate;
    calls.push(
      new Promise((resolve) => setTimeout(() => resolve(), Math.max(0, intended - performance.now()))).then(
        async () => {
          const tokensBefore = tokenRequests.inFlight === 0 ? tokenRequests.sent : undefined;
          try {
            const current = await run.get(intended);
            const answer = await request(
              env.at(`${env.baseUrl}/v3/partner/${current.partnerId}/loans?limit=5`),
              {
                headers: { authorization: `Bearer ${current.value}` },
              },
            );
            api.push(performance.now() - intended);
            if (tokensBefore === tokenRequests.sent && tokenRequests.inFlight === 0)
              quiet.push(performance.now() - intended);
            if (trace)
              traced.push([
                Math.round(intended - t0),
                Math.round(performance.now() - intended),
                answer.status,
              ]);
            answered += 1;
            if (answer.status !== 200) count(statuses, answer.status);
            if (answer.status === 401) {
              count(refusals, refusalReason(answer.body));
              void run.refused(current, performance.now()).catch(() => {});
            }
          } catch (error) {
            count(statuses, `error ${error.code ?? error.message}`);
          }
        },
      ),
    );
  }
  return Promise.all(calls).then(() => ({
    // When the journey's first call was due, in ms since the epoch (to line other records up with it).
    ...(trace && { startedAtEpoch: performance.timeOrigin + startAt }),
    api,
    quiet,
    token,
    answered,
    statuses,
    refusals,
    ...(trace && { traced }),
  }));
}

const input = JSON.parse(await text(process.stdin));
for (const env of input.runs) env.at = nextOrigin(env);
let output;
if (input.mode === 'throughput') output = await throughput(input.runs[0], input);
else if (input.mode === 'sequence') output = await sequence(input.runs[0], input);
else {
  // Everything is scheduled from one instant a little ahead, so that setting up does not skew the starts.
  const t0 = performance.now() + 200;
  const spreadMs = input.spreadMs ?? 5000;
  output = await Promise.all(
    input.runs.map((env, index) =>
      openLoop(env, {
        ...input,
        t0,
        startAt: t0 + (input.start === 'spread' ? (index * spreadMs) / input.runs.length : 0),
      }),
    ),
  );
}
agent.destroy();
process.stdout.write(`${JSON.stringify(output)}\n`);
