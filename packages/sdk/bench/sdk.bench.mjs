// Benchmarks of the built package (run `pnpm build` first; turbo's bench task does). Not tests: they
// print figures and ratios against baselines measured in the same run, interleaved A B A B… over
// several rounds (drift, GC and other processes hit every side alike), as median and range.
//   1. GET loans: SDK vs raw fetch with a fixed token vs openapi-fetch alone (goal ≤ 1.10× raw fetch)
//   2. token requests for 1,000 concurrent calls on a cold cache (goal 1)
//   3. cold import of the package vs openapi-fetch alone, fresh processes (goal ≤ 2×)
//   4. min+gzip size of the sdk and auth code
// Warm getToken() against its baseline is in the auth package's bench (`pnpm bench` runs both).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { startMock } from '@partner-lending/mock';
import { createPartnerClient } from '@partner-lending/sdk';
import createClient from 'openapi-fetch';

const require = createRequire(import.meta.url);
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};
const fmt = (n, digits = 3) => n.toFixed(digits);
const range = (values, digits = 2) =>
  `${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}`;
const ROUNDS = 7;

// A bare local API: 20 loans as JSON for any GET …/loans, no token check (the token is the client's cost).
const loans = JSON.stringify(Array.from({ length: 20 }, (_, i) => ({ id: `loan-${i}`, amount: 1000 + i })));
// Paths under /slow/ answer after 5 ms, a latency still far below a real network's.
const api = createServer((req, res) => {
  const answer = () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(loans) });
    res.end(loans);
  };
  if (req.url?.startsWith('/slow/')) setTimeout(answer, 5);
  else answer();
});
await new Promise((resolve) => api.listen(0, '127.0.0.1', resolve));
const apiUrl = `http://127.0.0.1:${api.address().port}`;
// Tokens come from the mock's token endpoint, for the mock's audience.
const mock = await startMock();
const [partner] = mock.clients;
const options = {
  authUrl: mock.authUrl,
  baseUrl: apiUrl,
  audience: mock.audience,
  clientId: partner.clientId,
  clientSecret: partner.clientSecret,
};

try {
  // 1. Overhead per GET, three sides interleaved per round: raw fetch, openapi-fetch, SDK.
  const compare = async (label, baseUrl, perRound) => {
    const client = createPartnerClient({ ...options, baseUrl });
    const token = await client.tokenProvider.getToken({ scopes: ['read:loans'] });
    const url = `${baseUrl}/v3/partner/${encodeURIComponent(token.partnerId)}/loans?limit=20`;
    const headers = { authorization: `Bearer ${token.accessToken}` };
    const raw = async () => (await fetch(url, { headers })).json();
    // The same with a deadline of its own (what any production call has, and the SDK always sets): the
    // AbortController and undici's signal wiring are the larger part of the SDK's remaining cost
    // (found with --cpu-prof, comparing self time per call against raw fetch).
    const rawTimed = async () => {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), 30_000);
      try {
        return await (await fetch(url, { headers, signal: controller.signal })).json();
      } finally {
        clearTimeout(timer);
      }
    };
    const sdk = () => client.loans.list({ limit: 20 });
    // openapi-fetch alone with the same fixed token: the share of the overhead that is the typed layer's.
    const bare = createClient({ baseUrl, headers });
    const typed = async () =>
      (
        await bare.GET('/v3/partner/{partner_id}/loans', {
          params: { path: { partner_id: token.partnerId }, query: { limit: 20 } },
        })
      ).data;
    const time = async (fn, n) => {
      const samples = [];
      for (let i = 0; i < n; i++) {
        const start = performance.now();
        await fn();
        samples.push(performance.now() - start);
      }
      return median(samples);
    };
    for (const fn of [raw, rawTimed, typed, sdk]) await time(fn, perRound); // warm-up
    const sdkToRaw = [];
    const sdkToTimed = [];
    const typedToRaw = [];
    const sdkToTyped = [];
    const medians = { raw: [], timed: [], typed: [], sdk: [] };
    for (let round = 0; round < ROUNDS; round++) {
      const r = await time(raw, perRound);
      const d = await time(rawTimed, perRound);
      medians.timed.push(d);
      const t = await time(typed, perRound);
      const k = await time(sdk, perRound);
      medians.raw.push(r);
      medians.typed.push(t);
      medians.sdk.push(k);
      sdkToRaw.push(k / r);
      sdkToTimed.push(k / d);
      typedToRaw.push(t / r);
      sdkToTyped.push(k / t);
    }
    console.log(`GET loans, ${label}, ${ROUNDS} interleaved rounds of ${perRound} calls each:`);
    console.log(
      `  per-call medians: raw fetch ${fmt(median(medians.raw))} ms, raw fetch with a deadline ${fmt(median(medians.timed))} ms, openapi-fetch ${fmt(median(medians.typed))} ms, SDK ${fmt(median(medians.sdk))} ms (SDK − raw ${fmt((median(medians.sdk) - median(medians.raw)) * 1000, 0)} µs)`,
    );
    console.log(
      `  SDK / raw fetch ${fmt(median(sdkToRaw), 2)}× (range ${range(sdkToRaw)}; goal ≤ 1.10), SDK / raw fetch with a deadline ${fmt(median(sdkToTimed), 2)}× (range ${range(sdkToTimed)}), openapi-fetch / raw ${fmt(median(typedToRaw), 2)}× (range ${range(typedToRaw)}), SDK / openapi-fetch ${fmt(median(sdkToTyped), 2)}× (range ${range(sdkToTyped)})`,
    );
  };
  await compare('loopback server answering at once', apiUrl, 300);
  await compare('loopback server answering after 5 ms', `${apiUrl}/slow`, 60);

  // 2. Single flight on a cold cache.
  const cold = createPartnerClient(options);
  const before = mock.tokenRequestCount();
  await Promise.all(Array.from({ length: 1000 }, () => cold.loans.list({ limit: 1 })));
  console.log(
    `token requests for 1,000 concurrent calls on a cold cache: ${mock.tokenRequestCount() - before} (goal 1)`,
  );
} finally {
  await mock.close();
  await new Promise((resolve) => api.close(resolve));
}

// 3. Cold import, each in a fresh process, SDK and openapi-fetch alternating.
const importMs = (specifier) =>
  Number(
    execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const t = performance.now(); await import(${JSON.stringify(specifier)}); console.log(performance.now() - t);`,
      ],
      { cwd: fileURLToPath(new URL('..', import.meta.url)), encoding: 'utf8' },
    ).trim(),
  );
const imports = { sdk: [], fetch: [], ratio: [] };
for (let round = 0; round < ROUNDS; round++) {
  const perRound = { sdk: [], fetch: [] };
  for (let i = 0; i < 3; i++) {
    perRound.sdk.push(importMs('@partner-lending/sdk'));
    perRound.fetch.push(importMs('openapi-fetch'));
  }
  imports.sdk.push(median(perRound.sdk));
  imports.fetch.push(median(perRound.fetch));
  imports.ratio.push(median(perRound.sdk) / median(perRound.fetch));
}
console.log(
  `cold import, ${ROUNDS} interleaved rounds of 3 fresh processes each: @partner-lending/sdk ${fmt(median(imports.sdk), 1)} ms (all its dependencies included), openapi-fetch alone ${fmt(median(imports.fetch), 1)} ms: ${fmt(median(imports.ratio), 2)}× (range ${range(imports.ratio)}; goal ≤ 2×)`,
);

// 4. Size: each package's own code, minified with esbuild and gzipped.
const esbuild = createRequire(require.resolve('tsup'))('esbuild');
const size = (file) => {
  const { code } = esbuild.transformSync(readFileSync(file, 'utf8'), { minify: true, format: 'esm' });
  return { min: Buffer.byteLength(code), gzip: gzipSync(code, { level: 9 }).length };
};
const kb = (bytes) => `${(bytes / 1024).toFixed(1)} kB`;
for (const name of ['@partner-lending/sdk', '@partner-lending/auth']) {
  const file = require.resolve(name).replace(/\.cjs$/, '.js');
  const { min, gzip } = size(file);
  console.log(`size of ${name} (dist/index.js, own code): ${kb(min)} min, ${kb(gzip)} min+gzip`);
}
