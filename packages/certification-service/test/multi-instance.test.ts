import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePlan } from '../src/index.js';
import { ed25519Pem, type InProcessService, inProcessService } from './support/in-process.js';
import { freePort, startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';
import { api, type CreatedRun, journeyRun } from './support/service.js';

let postgres: ThrowawayPostgres;
const instances: InProcessService[] = [];
let proxy: Server;
let proxyUrl: string;
const served = [0, 0];

beforeAll(async () => {
  postgres = await startPostgres();
  const databaseUrl = await postgres.database('multi');
  const port = await freePort();
  proxyUrl = `http://127.0.0.1:${port}`;
  // Every instance signs with the same key (the operator gives them one SIGNING_KEY_FILE).
  const keyFile = join(mkdtempSync(join(tmpdir(), 'pcs-key-')), 'signing-key.pem');
  writeFileSync(keyFile, ed25519Pem(), { mode: 0o600 });
  for (let i = 0; i < 2; i += 1)
    instances.push(
      await inProcessService({
        databaseUrl,
        publicUrl: proxyUrl,
        keyFile,
        sweepIntervalMs: 500,
        plan: makePlan({ id: 'short', ttlSeconds: 2 }),
      }),
    );
  // A round-robin proxy in front of both, as a load balancer without affinity would be.
  let next = 0;
  proxy = createServer((req, res) => {
    const index = next++ % 2;
    served[index]! += 1;
    const target = new URL(instances[index]!.service.url);
    const outgoing = request(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    outgoing.on('error', () => {
      res.writeHead(502);
      res.end();
    });
    req.pipe(outgoing);
  });
  await new Promise<void>((resolve) => proxy.listen(port, '127.0.0.1', resolve));
});
afterAll(async () => {
  await new Promise((resolve) => proxy?.close(resolve));
  for (const instance of instances) await instance.close();
  await postgres?.stop();
});

async function certify(url: string, apiKey: string): Promise<{ run: CreatedRun; judged: any; session: any }> {
  const { run, judged } = await journeyRun(url, apiKey);
  const session = (await api(url, apiKey, 'GET', `/api/runs/${run.id}/session`)).json();
  return { run, judged, session };
}

describe('two instances on one PostgreSQL behind a round-robin proxy', () => {
  it('serve one run together and reach the verdict one instance reaches', async () => {
    const { apiKey } = await instances[0]!.partner('Fleet Co');
    const together = await certify(proxyUrl, apiKey);
    // Both instances answered calls of the run.
    expect(served[0]).toBeGreaterThan(10);
    expect(served[1]).toBeGreaterThan(10);
    // Every exchange numbered once, none lost: 1..N with no gap, whichever instance recorded it.
    const seqs = together.session.exchanges.map((exchange: { seq: number }) => exchange.seq);
    expect(seqs).toEqual(seqs.map((_: number, index: number) => index + 1));
    // The scenario plan played once across the two (one revocation, one throttle, one outage).
    const fired = together.session.exchanges.filter((exchange: { injected?: string }) => exchange.injected);
    expect(fired.map((exchange: { injected: string }) => exchange.injected).sort()).toEqual([
      'revoked',
      'throttled',
      'unavailable',
    ]);

    // Ended: neither instance serves the run any more, though both had it open (each answers 404).
    for (const instance of instances) {
      const late = await fetch(`${instance.service.url}${new URL(together.run.tokenUrl).pathname}`, {
        method: 'POST',
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: together.run.clientId,
          client_secret: together.run.clientSecret,
        }),
      });
      expect(late.status).toBe(404);
    }

    const alone = await certify(instances[1]!.service.url, apiKey);
    const statuses = (judged: any) =>
      Object.fromEntries(judged.report.checks.map((check: any) => [check.id, check.status]));
    expect(together.judged.verdict).toBe('PASS');
    expect(statuses(together.judged)).toEqual(statuses(alone.judged));
  });
});
