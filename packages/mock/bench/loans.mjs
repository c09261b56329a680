// Benchmark (not a test): GET …/loans per second with full token validation, next to Prism serving the
// same spec in the same run, and the start-up time of startMock. Run with `pnpm bench` (builds first).
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { startMock } from '../dist/index.js';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const durationSeconds = Number(process.env.BENCH_DURATION ?? 8);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
const startupRuns = Number(process.env.BENCH_STARTUP_RUNS ?? 10);

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Spawns a server process; resolves once `ready(stdoutSoFar)` answers a value. */
function spawnServer(command, args, ready, timeoutMs = 60_000) {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} did not start in time: ${stderr.slice(-500)}`));
    }, timeoutMs);
    child.stdout.on('data', async (chunk) => {
      stdout += chunk;
      const value = await ready(stdout);
      if (value !== undefined) {
        clearTimeout(timer);
        resolve({ child, value });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${command} exited with ${code}: ${stderr.slice(-500)}`));
    });
  });
}

async function waitForHttp(url, headers) {
  for (let attempt = 0; attempt < 300; attempt += 1) {
    try {
      const response = await fetch(url, { headers });
      await response.arrayBuffer();
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} never answered 200`);
}

async function load(title, url, headers) {
  const result = await autocannon({ url, headers, connections, duration: durationSeconds, pipelining: 1 });
  const ok = result['2xx'];
  const perSecond = ok / durationSeconds;
  console.log(
    `${title.padEnd(34)} ${perSecond.toFixed(0).padStart(7)} ok req/s  p50 ${String(result.latency.p50).padStart(3)} ms  p99 ${String(result.latency.p99).padStart(3)} ms  non-2xx ${result.non2xx}  errors ${result.errors}`,
  );
  return perSecond;
}

// 1. Start-up time of startMock (fresh RSA key each time, then with a given key pair).
const startups = [];
for (let run = 0; run < startupRuns; run += 1) {
  const started = performance.now();
  const mock = await startMock();
  startups.push(performance.now() - started);
  await mock.close();
}
const { generateKeyPair } = await import('jose');
const pair = await generateKeyPair('RS256');
const startupsWithKey = [];
for (let run = 0; run < startupRuns; run += 1) {
  const started = performance.now();
  const mock = await startMock({ signingKey: pair });
  startupsWithKey.push(performance.now() - started);
  await mock.close();
}

// 2. The mock as users run it (the CLI, its own process), with full token validation per request.
const mockRun = await spawnServer(process.execPath, [here('../bin/partner-mock.js'), '--json'], (out) =>
  out.includes('\n') ? JSON.parse(out.slice(0, out.indexOf('\n'))) : undefined,
);
const info = mockRun.value;
const client = info.clients[0];
const tokenAnswer = await fetch(`${info.authUrl}/oauth/token`, {
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: client.clientId,
    client_secret: client.clientSecret,
    audience: info.audience,
    scope: 'read:loans',
  }),
});
const { access_token: token } = await tokenAnswer.json();
const headers = { authorization: `Bearer ${token}` };
const mockUrl = `${info.baseUrl}/v3/partner/${encodeURIComponent(client.partnerId)}/loans?limit=20`;
await waitForHttp(mockUrl, headers);

// 3. Prism serving the same bundled spec.
const prismPort = await freePort();
const prismUrl = `http://127.0.0.1:${prismPort}/v3/partner/${encodeURIComponent(client.partnerId)}/loans?limit=20`;
const prismStarted = performance.now();
const prism = spawn(
  here('../node_modules/.bin/prism'),
  ['mock', '-h', '127.0.0.1', '-p', String(prismPort), here('../../../spec/dist/openapi.json')],
  { stdio: 'ignore' },
);
try {
  await waitForHttp(prismUrl, headers);
  const prismStartup = performance.now() - prismStarted;

  console.log(`\nGET loans, ${connections} connections, ${durationSeconds} s each, Node ${process.version}`);
  const mockRate = await load('partner-mock (JWT validated)', mockUrl, headers);
  const prismRate = await load('prism mock (header presence only)', prismUrl, headers);
  console.log(`ratio partner-mock / prism: ${(mockRate / prismRate).toFixed(2)}×`);
  console.log(
    `\nstart-up: startMock median ${median(startups).toFixed(0)} ms (fresh RSA key), ${median(startupsWithKey).toFixed(0)} ms (signingKey given), over ${startupRuns} runs; prism mock ready after ${prismStartup.toFixed(0)} ms`,
  );
} finally {
  prism.kill('SIGTERM');
  mockRun.child.kill('SIGTERM');
}
