// Client mode figures (run with `pnpm bench`; it prints figures and asserts nothing):
// 1. what the certification stage adds per API call, against the mock alone, in the same run
//    (interleaved rounds, sequential keep-alive calls with a token from the server's own endpoint);
// 2. how long judging a recorded session of 100,000 exchanges takes (a correct client, and a
//    token-per-call client whose 50,000 tokens are the worst case of the token-reuse check).

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startMock } from '@partner-lending/mock';
import { formatSession, judgeSession, readSessionFile, startStage } from '../dist/index.js';

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
        phase: 'short',
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
    sessionVersion: 2,
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
      longTtlSeconds: 3600,
      shortPhaseMs: 30_000,
      tokenDelayMs: 0,
      apiDelayMs: 0,
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

// 10,000 token requests in flight at once (a herd of 10,000 callers), each token used once: the
// single-flight and reuse rules are the costly ones. Time and heap growth.
function herd(count) {
  const session = syntheticSession(count * 2, 2);
  for (const exchange of session.exchanges) {
    if (exchange.server === 'auth') {
      exchange.at = exchange.seq / 1000;
      exchange.end = 5_000;
    } else {
      exchange.at = 5_000 + exchange.seq / 1000;
      exchange.end = exchange.at + 1;
    }
  }
  for (const token of session.tokens) {
    token.issuedAt = 5_000;
    token.expAt = 3_605_000;
    token.phase = 'long';
  }
  session.stage.shortPhaseMs = 0;
  return session;
}
{
  const session = herd(10_000);
  global.gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const started = performance.now();
  judgeSession(session);
  const ms = performance.now() - started;
  const heap = process.memoryUsage().heapUsed - heapBefore;
  console.log(
    `judging 10,000 token requests in flight at once (20,000 exchanges): ${(ms / 1000).toFixed(3)} s, heap +${(heap / 1048576).toFixed(0)} MiB (target: seconds, under 1 GB)`,
  );
}

// A session file at the recorder's cap (50,000 exchanges, every kept text at its longest): read,
// validated and judged from disk; its size, the time and the process's peak RSS.
{
  const session = syntheticSession(50_000, 25);
  for (const exchange of session.exchanges) {
    exchange.responseBody = 'x'.repeat(300);
    exchange.target = `${exchange.target}&pad=${'p'.repeat(200)}`;
  }
  const dir = await mkdtemp(join(tmpdir(), 'bench-session-'));
  const file = join(dir, 'session.json');
  await writeFile(file, formatSession(session));
  global.gc?.();
  let peak = process.memoryUsage().rss;
  const rssBefore = peak;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 5);
  const started = performance.now();
  const read = await readSessionFile(file);
  judgeSession(read.session);
  const ms = performance.now() - started;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  console.log(
    `a 50,000-exchange session file (${(read.bytes / 1048576).toFixed(1)} MiB) read, validated and judged: ${(ms / 1000).toFixed(2)} s, peak RSS +${((peak - rssBefore) / 1048576).toFixed(0)} MiB (files over ${100} MiB are refused unread)`,
  );
  await rm(dir, { recursive: true });
}
