// Benchmarks of the built package (run `pnpm build` first; turbo's bench task does). Not tests: they
// print figures and ratios against baselines measured in the same run. Copy them into the README.
//   1. GET loans through the SDK vs a raw fetch of the same URL with a fixed token (median ratio; goal ≤ 1.05)
//   2. token requests for 1,000 concurrent calls on a cold cache (goal 1)
//   3. cold import time of the package (fresh node processes), next to importing openapi-fetch alone
//   4. min+gzip size of the sdk and auth code
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
  // 1. Overhead per GET.
  const compare = async (label, baseUrl, rounds, perRound) => {
    const client = createPartnerClient({ ...options, baseUrl });
    const token = await client.tokenProvider.getToken({ scopes: ['read:loans'] });
    const url = `${baseUrl}/v3/partner/${encodeURIComponent(token.partnerId)}/loans?limit=20`;
    const headers = { authorization: `Bearer ${token.accessToken}` };
    const raw = async () => (await fetch(url, { headers })).json();
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
      return samples;
    };
    await time(raw, perRound);
    await time(sdk, perRound);
    await time(typed, perRound);
    const rawSamples = [];
    const sdkSamples = [];
    const typedSamples = [];
    // Interleaved rounds so that drift (GC, CPU frequency, other processes) hits both alike.
    for (let round = 0; round < rounds; round++) {
      rawSamples.push(...(await time(raw, perRound)));
      sdkSamples.push(...(await time(sdk, perRound)));
      typedSamples.push(...(await time(typed, perRound)));
    }
    const rawMedian = median(rawSamples);
    const sdkMedian = median(sdkSamples);
    console.log(
      `GET loans, ${label}, median of ${sdkSamples.length}: raw fetch ${fmt(rawMedian)} ms, sdk ${fmt(sdkMedian)} ms, overhead ${fmt((sdkMedian - rawMedian) * 1000, 0)} µs, ratio ${fmt(sdkMedian / rawMedian, 2)} (goal ≤ 1.05)`,
    );
    const typedMedian = median(typedSamples);
    console.log(
      `  of which openapi-fetch alone with the fixed token: ${fmt(typedMedian)} ms, ratio ${fmt(typedMedian / rawMedian, 2)} to raw fetch; the SDK's own layer (auth, scopes, partner id, retries, timeout) ${fmt(sdkMedian / typedMedian, 2)}× openapi-fetch`,
    );
  };
  await compare('loopback server answering at once', apiUrl, 10, 200);
  await compare('loopback server answering after 5 ms', `${apiUrl}/slow`, 4, 100);

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

// 3. Cold import, each in a fresh process.
const importMs = (specifier) => {
  const samples = [];
  for (let i = 0; i < 15; i++) {
    const out = execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const t = performance.now(); await import(${JSON.stringify(specifier)}); console.log(performance.now() - t);`,
      ],
      { cwd: fileURLToPath(new URL('..', import.meta.url)), encoding: 'utf8' },
    );
    samples.push(Number(out.trim()));
  }
  return median(samples);
};
const sdkImport = importMs('@partner-lending/sdk');
const authImport = importMs('@partner-lending/auth');
const fetchImport = importMs('openapi-fetch');
console.log(
  `cold import, median of 15 processes: @partner-lending/sdk ${fmt(sdkImport, 1)} ms (all its dependencies included); of which @partner-lending/auth alone (with jose) ${fmt(authImport, 1)} ms, openapi-fetch alone ${fmt(fetchImport, 1)} ms`,
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
