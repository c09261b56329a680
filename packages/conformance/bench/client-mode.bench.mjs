// Client mode figures (run with `pnpm bench`; it prints figures and asserts nothing):
// 1. what the certification stage adds per API call, against the mock alone, in the same run
//    (interleaved rounds, sequential keep-alive calls with a token from the server's own endpoint);
// 2. how long judging a recorded session of 100,000 exchanges takes (a correct client, and a
//    token-per-call client whose 50,000 tokens are the worst case of the token-reuse check).
import { startMock } from '@partner-lending/mock';
import { judgeSession, startStage } from '../dist/index.js';

const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const calls = Number(process.env.BENCH_CALLS ?? 2000);
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function token(tokenUrl, clientId, clientSecret, audience) {
  const response = await fetch(tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: clientId,
      client_secret: clientSecret,
      scope: 'read:loans',
      audience,
    }),
  });
  return response.json();
}

async function perCall(baseUrl, answer) {
  const url = `${baseUrl}/v3/partner/${answer.partnerId}/loans?limit=20`;
  const headers = { authorization: `Bearer ${answer.access_token}` };
  for (let i = 0; i < 50; i += 1) await (await fetch(url, { headers })).arrayBuffer(); // warm up
  const started = performance.now();
  for (let i = 0; i < calls; i += 1) {
    const response = await fetch(url, { headers });
    if (response.status !== 200) throw new Error(`GET loans answered ${response.status}`);
    await response.arrayBuffer();
  }
  return ((performance.now() - started) / calls) * 1000;
}

const mock = await startMock({ tokenTtlSeconds: 3600 });
const stage = await startStage({
  ttlSeconds: 3600,
  scenarios: [],
  tokenDelayMs: 0,
  apiDelayMs: 0,
  maxExchanges: 1_000_000,
});
const client = mock.clients[0];
const mockToken = await token(mock.tokenUrl, client.clientId, client.clientSecret, mock.audience);
const stageToken = await token(
  stage.tokenUrl,
  stage.client.clientId,
  stage.client.clientSecret,
  stage.audience,
);
const mockUs = [];
const stageUs = [];
for (let round = 0; round < rounds; round += 1) {
  mockUs.push(await perCall(mock.baseUrl, mockToken));
  stageUs.push(await perCall(stage.baseUrl, stageToken));
  console.log(
    `round ${round + 1}: mock ${mockUs.at(-1).toFixed(0)} µs/call, stage ${stageUs.at(-1).toFixed(0)} µs/call`,
  );
}
await mock.close();
await stage.close();
const m = median(mockUs);
const s = median(stageUs);
const ratios = mockUs.map((value, index) => (stageUs[index] - value) / value);
console.log(
  `per GET loans (${calls} sequential calls × ${rounds} rounds, medians): mock alone ${m.toFixed(0)} µs, through the stage ${s.toFixed(0)} µs; ` +
    `the stage adds ${(s - m).toFixed(0)} µs = ${((s - m) / m).toFixed(2)}× the mock's own cost (per round ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}×; target ≤ 1×)`,
);

function syntheticSession(exchanges, tokenEvery) {
  const list = [];
  const tokens = [];
  let ref = '';
  for (let i = 0; i < exchanges; i += 1) {
    const at = i;
    if (i % tokenEvery === 0) {
      ref = `T${tokens.length + 1}`;
      tokens.push({
        ref,
        seq: i + 1,
        issuedAt: at + 1,
        expAt: at + 10_000,
        expiresIn: 9,
        scope: ['read:loans'],
        partnerId: 'p1',
        last6: 'abcdef',
      });
      list.push({
        seq: i + 1,
        server: 'auth',
        at,
        end: at + 1,
        method: 'POST',
        target: '/oauth/token',
        requestHeaders: { 'content-type': 'application/x-www-form-urlencoded' },
        body: { bytes: 120, kind: 'form' },
        form: {
          grantType: 'client_credentials',
          scope: 'read:loans',
          audience: 'http://127.0.0.1:2',
          resource: [],
          clientAuth: 'body',
          clientIdMatches: true,
          secretMatches: true,
          repeated: [],
        },
        leaks: [],
        status: 200,
        responseHeaders: {},
        responseBody: '',
        issued: ref,
      });
      continue;
    }
    list.push({
      seq: i + 1,
      server: 'api',
      at,
      end: at + 0.5,
      method: 'GET',
      target: '/v3/partner/p1/loans?limit=10',
      requestHeaders: { authorization: 'Bearer …abcdef' },
      bearer: { scheme: 'Bearer', wellFormed: true, token: ref },
      body: { bytes: 0, kind: 'none' },
      leaks: [],
      status: 200,
      responseHeaders: {},
      responseBody: '[]',
    });
  }
  return {
    kind: 'partner-conformance-client-session',
    sessionVersion: 1,
    tool: { name: 'bench', version: '0' },
    startedAt: new Date(0).toISOString(),
    durationMs: exchanges,
    stage: {
      authUrl: 'http://127.0.0.1:1',
      baseUrl: 'http://127.0.0.1:2',
      tokenUrl: 'http://127.0.0.1:1/oauth/token',
      audience: 'http://127.0.0.1:2',
      partnerId: 'p1',
      authorizedScopes: ['read:loans'],
      ttlSeconds: 10,
      tokenDelayMs: 0,
    },
    scenarios: [],
    journey: { command: ['bench'], exitCode: 0, signal: null, durationMs: exchanges, ending: 'exited' },
    exchanges: list,
    tokens,
    maxExchanges: exchanges,
    dropped: 0,
  };
}

for (const [label, session] of [
  ['a correct client (a token per 10,000 exchanges)', syntheticSession(100_000, 10_000)],
  ['a token per call (50,000 tokens)', syntheticSession(100_000, 2)],
]) {
  const times = [];
  for (let i = 0; i < 3; i += 1) {
    const started = performance.now();
    judgeSession(session);
    times.push(performance.now() - started);
  }
  console.log(
    `judging 100,000 exchanges, ${label}: ${(median(times) / 1000).toFixed(3)} s (median of 3; target < 1 s)`,
  );
}
