// Benchmark (not a test): GET …/loans per second under load, in one run and interleaved over rounds
// (A B C D, A B C D, …) so that a shared machine's changing load hits every server alike:
//   - partner-mock, full token validation, with its caches (the default);
//   - partner-mock with caches: false (every request verifies the RS256 signature and serialises the
//     page: the mock as it was before the caches);
//   - a bare node:http server answering the same page with no checks at all (the floor);
//   - Prism (`prism mock`) serving the same bundled spec (checks only that a header exists).
// Then the start-up time of startMock. Run with `pnpm bench` (builds first).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { startMock } from '../dist/index.js';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const durationSeconds = Number(process.env.BENCH_DURATION ?? 4);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const rounds = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 5));
const startupRuns = Number(process.env.BENCH_STARTUP_RUNS ?? 10);
const withPrism = process.env.BENCH_PRISM !== '0';
// Optional: a serve-mock.mjs of another build (e.g. an older commit) to compare with, in the same rounds.
const otherBuild = process.env.BENCH_OTHER_SERVER;

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

const firstLine = (out) => (out.includes('\n') ? JSON.parse(out.slice(0, out.indexOf('\n'))) : undefined);

async function startMockProcess(options, script = here('./serve-mock.mjs')) {
  const run = await spawnServer(process.execPath, [script, JSON.stringify(options)], firstLine);
  const info = run.value;
  const answer = await fetch(`${info.authUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: info.clientId,
      client_secret: info.clientSecret,
      audience: info.audience,
      scope: 'read:loans',
    }),
  });
  const { access_token: token } = await answer.json();
  const headers = { authorization: `Bearer ${token}` };
  const url = `${info.baseUrl}/v3/partner/${encodeURIComponent(info.partnerId)}/loans?limit=20`;
  await waitForHttp(url, headers);
  return { child: run.child, url, headers };
}

// CPU time (user + system, ms) a server process has used so far: Linux /proc only, else undefined.
// Steadier than req/s on a shared machine, where other jobs take the CPU the server waits for.
function cpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, at USER_HZ 100
  } catch {
    return undefined;
  }
}

async function load(target) {
  const before = cpuMs(target.child.pid);
  const result = await autocannon({
    url: target.url,
    headers: target.headers,
    connections,
    duration: durationSeconds,
    pipelining: 1,
  });
  const after = cpuMs(target.child.pid);
  if (result.non2xx > 0 || result.errors > 0)
    console.log(`  (${target.title}: non-2xx ${result.non2xx}, errors ${result.errors})`);
  const ok = result['2xx'];
  return {
    rate: ok / durationSeconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    cpuUs:
      before === undefined || after === undefined || ok === 0 ? undefined : ((after - before) * 1000) / ok,
  };
}

const range = (values) => `${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)}`;
const ratioRange = (values) => `${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}`;

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

// 2. The servers, each in its own process.
const children = [];
try {
  const cached = await startMockProcess({});
  children.push(cached.child);
  const uncached = await startMockProcess({ caches: false });
  children.push(uncached.child);
  const bareRun = await spawnServer(process.execPath, [here('./bare-server.mjs')], firstLine);
  children.push(bareRun.child);
  const bare = {
    child: bareRun.child,
    url: `http://127.0.0.1:${bareRun.value.port}/v3/partner/p/loans?limit=20`,
    headers: {},
  };
  const targets = [
    { title: 'partner-mock (JWT validated, caches)', ...cached },
    { title: 'partner-mock, caches: false', ...uncached },
    { title: 'bare node:http (no checks)', ...bare },
  ];
  if (otherBuild) {
    const other = await startMockProcess({}, otherBuild);
    children.push(other.child);
    targets.push({ title: 'BENCH_OTHER_SERVER build', ...other });
  }
  let prismStartup;
  if (withPrism) {
    const prismPort = await freePort();
    const prismUrl = `http://127.0.0.1:${prismPort}${new URL(cached.url).pathname}?limit=20`;
    const started = performance.now();
    const prism = spawn(
      here('../node_modules/.bin/prism'),
      ['mock', '-h', '127.0.0.1', '-p', String(prismPort), here('../../../spec/dist/openapi.json')],
      { stdio: 'ignore' },
    );
    children.push(prism);
    await waitForHttp(prismUrl, cached.headers);
    prismStartup = performance.now() - started;
    targets.push({
      title: 'prism mock (header presence only)',
      child: prism,
      url: prismUrl,
      headers: cached.headers,
    });
  }

  console.log(
    `\nGET loans?limit=20, ${connections} connections, ${durationSeconds} s per server per round, ${rounds} rounds interleaved, Node ${process.version}`,
  );
  const results = targets.map(() => []);
  for (let round = 0; round < rounds; round += 1) {
    const line = [];
    for (const [index, target] of targets.entries()) {
      const result = await load(target);
      results[index].push(result);
      line.push(result.rate.toFixed(0));
    }
    console.log(`round ${round + 1}: ${line.join(' / ')} req/s`);
  }
  console.log('');
  for (const [index, target] of targets.entries()) {
    const rates = results[index].map((result) => result.rate);
    const p50s = results[index].map((result) => result.p50);
    const p99s = results[index].map((result) => result.p99);
    const cpu = results[index].map((result) => result.cpuUs).filter((value) => value !== undefined);
    console.log(
      `${target.title.padEnd(38)} median ${median(rates).toFixed(0).padStart(6)} req/s  range ${range(rates).padStart(11)}  p50 ${median(p50s)} ms  p99 ${median(p99s)} ms${cpu.length ? `  server CPU ${median(cpu).toFixed(0)} µs/req (range ${range(cpu)})` : ''}`,
    );
  }
  // Ratios per round (the two servers of a ratio ran seconds apart), then their median and range.
  const ratio = (a, b) => results[a].map((result, round) => result.rate / results[b][round].rate);
  const show = (title, values) =>
    console.log(`${title.padEnd(38)} ${median(values).toFixed(2)}×  (range ${ratioRange(values)}×)`);
  console.log('');
  show('partner-mock / caches: false', ratio(0, 1));
  const cpuRatio = results[1]
    .map((result, round) => result.cpuUs / results[0][round].cpuUs)
    .filter((value) => Number.isFinite(value));
  if (cpuRatio.length) show('server CPU per request, caches: false / on', cpuRatio);
  show('partner-mock / bare node:http', ratio(0, 2));
  if (otherBuild) show('partner-mock / BENCH_OTHER_SERVER build', ratio(0, 3));
  if (withPrism) show('partner-mock / prism', ratio(0, targets.length - 1));
  console.log(
    `\nstart-up: startMock median ${median(startups).toFixed(0)} ms (fresh RSA key), ${median(startupsWithKey).toFixed(0)} ms (signingKey given), over ${startupRuns} runs${prismStartup === undefined ? '' : `; prism mock ready after ${prismStartup.toFixed(0)} ms`}`,
  );
} finally {
  for (const child of children) child.kill('SIGTERM');
}
