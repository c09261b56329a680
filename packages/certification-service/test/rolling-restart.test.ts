import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ed25519Pem } from './support/in-process.js';
import { freePort, startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';
import { admin, api, type CreatedRun, type ServeProcess, startServe } from './support/service.js';

let postgres: ThrowawayPostgres;
let dir: string;
let env: Record<string, string>;
const ports: number[] = [];
const instances: (ServeProcess | undefined)[] = [undefined, undefined];
let proxy: Server;
let proxyUrl: string;
/** Calls the proxy could hand to no instance (a load balancer's 502s). */
let unplaced = 0;
/** Attempts refused by a stopped instance and sent to the other. */
let rerouted = 0;
/** What the balancer's health check last saw of each instance, and whether it saw each one stopping. */
const healthy = [false, false];
const sawStopping = [false, false];
let checking: NodeJS.Timeout | undefined;

const serve = (index: number) =>
  startServe({
    cwd: dir,
    env,
    args: [
      '--port',
      String(ports[index]),
      '--public-url',
      proxyUrl,
      '--log-format',
      'text',
      '--shutdown-delay',
      '1',
    ],
  });

beforeAll(async () => {
  postgres = await startPostgres();
  dir = mkdtempSync(join(tmpdir(), 'pcs-rolling-'));
  const keyFile = join(dir, 'signing-key.pem');
  writeFileSync(keyFile, ed25519Pem(), { mode: 0o600 });
  env = { DATABASE_URL: await postgres.database('rolling'), SIGNING_KEY_FILE: keyFile };
  ports.push(await freePort(), await freePort());
  const proxyPort = await freePort();
  proxyUrl = `http://127.0.0.1:${proxyPort}`;
  [instances[0], instances[1]] = await Promise.all([serve(0), serve(1)]);
  // A load balancer without affinity: round robin over the instances its health check (GET /readyz
  // every 100 ms, as HAProxy or Envoy do) last found ready; a connection refused (an instance starting)
  // goes to the other one. One connection per request.
  const check = (index: number) =>
    fetch(`http://127.0.0.1:${ports[index]}/readyz`, { signal: AbortSignal.timeout(1000) }).then(
      async (answer) => {
        const body = (await answer.json()) as { checks?: { accepting?: string } };
        healthy[index] = answer.status === 200;
        if (body.checks?.accepting === 'stopping') sawStopping[index] = true;
      },
      () => {
        healthy[index] = false;
      },
    );
  await Promise.all([check(0), check(1)]);
  checking = setInterval(() => void Promise.all([check(0), check(1)]), 100);
  let next = 0;
  proxy = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const attempt = (tries: number) => {
        const pick = next++ % 2;
        const index = healthy[pick] || !healthy[1 - pick] ? pick : 1 - pick;
        const port = ports[index]!;
        const outgoing = request(
          { host: '127.0.0.1', port, path: req.url, method: req.method, headers: req.headers, agent: false },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          },
        );
        outgoing.on('error', (error: NodeJS.ErrnoException) => {
          if (error.code === 'ECONNREFUSED' && tries < 40) {
            rerouted += 1;
            setTimeout(() => attempt(tries + 1), 50);
          } else {
            unplaced += 1;
            if (!res.headersSent) res.writeHead(502);
            res.end();
          }
        });
        outgoing.end(body);
      };
      attempt(0);
    });
  });
  await new Promise<void>((resolve) => proxy.listen(proxyPort, '127.0.0.1', resolve));
});
afterAll(async () => {
  clearInterval(checking);
  await new Promise((resolve) => proxy?.close(resolve));
  for (const instance of instances) await instance?.stop();
  await postgres?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('rolling restart of two instances on PostgreSQL', () => {
  it('SIGTERM to one, then the other, with calls and token requests in flight: no call fails, the run is judged', async () => {
    const { apiKey } = await admin('add-partner', 'Rolling Lending', { cwd: dir, env });
    // The run's addresses are the proxy's (--public-url): partners reach the fleet through it.
    const run = (
      await api(proxyUrl, apiKey, 'POST', '/api/runs', { scenarios: [], ttlSeconds: 3600 })
    ).json() as CreatedRun;
    expect(run.tokenUrl.startsWith(proxyUrl)).toBe(true);
    const body = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: run.clientId,
      client_secret: run.clientSecret,
      scope: 'read:loans',
    });
    const first = (await (await fetch(run.tokenUrl, { method: 'POST', body })).json()) as {
      access_token: string;
      partnerId: string;
    };
    const outcomes = { ok: 0, failed: [] as string[] };
    let inFlight = 0;
    const count = (what: string) => async (response: Response) => {
      await response.arrayBuffer();
      inFlight -= 1;
      if (response.status === 200) outcomes.ok += 1;
      else outcomes.failed.push(`${what} ${response.status}`);
    };
    const send = (what: string, url: string, init: RequestInit) => {
      inFlight += 1;
      return fetch(url, init).then(count(what), (error: Error) => {
        inFlight -= 1;
        outcomes.failed.push(`${what} ${error.message}`);
      });
    };
    const apiCall = () =>
      send('api', `${run.baseUrl}/v3/partner/${first.partnerId}/loans?limit=5`, {
        headers: { authorization: `Bearer ${first.access_token}` },
      });
    const tokenCall = () => send('token', run.tokenUrl, { method: 'POST', body });
    // About 20 API calls a second and 8 token requests always in flight, until told to stop.
    let stopping = false;
    const apiLoad = (async () => {
      while (!stopping) await Promise.all([apiCall(), apiCall(), new Promise((r) => setTimeout(r, 100))]);
    })();
    const tokenLoad = Promise.all(
      Array.from({ length: 8 }, async () => {
        while (!stopping) await tokenCall();
      }),
    );
    const drains: number[] = [];
    const inFlightAtSignal: number[] = [];
    try {
      await new Promise((resolve) => setTimeout(resolve, 2000));
      for (const index of [0, 1]) {
        const before = outcomes.ok;
        const sent = Date.now();
        inFlightAtSignal.push(inFlight);
        expect(await instances[index]!.stop('SIGTERM')).toBe(0);
        drains.push(Date.now() - sent);
        expect(instances[index]!.output()).toContain('SIGTERM: stopping');
        instances[index] = await serve(index);
        await new Promise((resolve) => setTimeout(resolve, 1500));
        // Calls were answered across the restart (the other instance carried them).
        expect(outcomes.ok).toBeGreaterThan(before);
      }
    } finally {
      stopping = true;
      await Promise.all([apiLoad, tokenLoad]);
    }
    expect(outcomes.failed).toEqual([]);
    expect(unplaced).toBe(0);
    // Not vacuous: calls were in flight at each SIGTERM, and the balancer saw each instance stopping
    // (its /readyz answered 503 "stopping" while it still served) before it went.
    for (const calls of inFlightAtSignal) expect(calls).toBeGreaterThan(0);
    expect(sawStopping).toEqual([true, true]);
    expect(outcomes.ok).toBeGreaterThan(50);

    const finished = await api(proxyUrl, apiKey, 'POST', `/api/runs/${run.id}/finish`, {
      journeyExitCode: 0,
    });
    expect(finished.status).toBe(200);
    const status = (await api(proxyUrl, apiKey, 'GET', `/api/runs/${run.id}`)).json();
    expect(status.status).toBe('judged');
    const session = (await api(proxyUrl, apiKey, 'GET', `/api/runs/${run.id}/session`)).json();
    // Every answered call is in the session (the first token request too), numbered without a gap.
    const seqs = session.exchanges.map((exchange: { seq: number }) => exchange.seq);
    expect(seqs).toEqual(seqs.map((_: number, index: number) => index + 1));
    expect(seqs.length).toBeGreaterThanOrEqual(outcomes.ok + 1);
    console.info(
      `rolling restart: ${outcomes.ok} calls answered, 0 failed, ${rerouted} attempts rerouted; in flight at SIGTERM ${inFlightAtSignal.join(', ')}; exit after SIGTERM ${drains.join(' ms, ')} ms`,
    );
  });
});
