import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  createLogger,
  logFlushMs,
  redactedFields,
  requestLineFields,
  requestLogger,
} from '../src/observability/logger.js';
import {
  admin,
  api,
  type CreatedRun,
  curlJourney,
  journeyEnv,
  runCommand,
  startServe,
} from './support/service.js';

/** The service's logger writing into an array of lines. */
function capturedLogger() {
  const written: string[] = [];
  const logger = createLogger({
    destination: new Writable({
      write(chunk, _encoding, done) {
        written.push(String(chunk));
        done();
      },
    }),
  });
  return { written, logger };
}

describe('structured logs', () => {
  it('a whole run logs one JSON line per event, with request, run and partner ids, and no secret or token', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcs-logs-'));
    try {
      const { apiKey, partnerId } = await admin('add-partner', 'Logged Lending', { cwd: dir });
      const service = await startServe({ cwd: dir });
      let run: CreatedRun;
      let accessToken: string;
      try {
        run = (await api(service.url, apiKey, 'POST', '/api/runs', { ttlSeconds: 3 })).json() as CreatedRun;
        const journey = await runCommand('sh', [curlJourney], {
          env: { ...journeyEnv(run), JOURNEY_SECONDS: '5' },
          timeoutMs: 60_000,
        });
        expect(journey.code, journey.stderr).toBe(0);
        // A careless client: its secret in the query string, its token after it; and a token of our own.
        const careless = await fetch(
          `${run.tokenUrl}?client_secret=${encodeURIComponent(run.clientSecret)}&client_id=${run.clientId}`,
          {
            method: 'POST',
            headers: {
              'content-type': 'application/x-www-form-urlencoded',
              'x-request-id': 'req-careless-1',
            },
            body: new URLSearchParams({
              grant_type: 'client_credentials',
              client_id: run.clientId,
              client_secret: run.clientSecret,
            }),
          },
        );
        expect(careless.headers.get('x-request-id')).toBe('req-careless-1');
        accessToken = ((await careless.json()) as { access_token: string }).access_token;
        expect(accessToken.length).toBeGreaterThan(20);
        await fetch(`${run.baseUrl}/v3/partner/x/loans?access_token=${accessToken}`, {
          headers: { authorization: `Bearer ${accessToken}` },
        });
        expect((await api(service.url, 'pcs_key_wrong', 'GET', '/api/decisions')).status).toBe(401);
        const finished = await api(service.url, apiKey, 'POST', `/api/runs/${run.id}/finish`, {
          journeyExitCode: 0,
        });
        expect(finished.status).toBe(200);
      } finally {
        await service.stop();
      }
      const lines = service
        .output()
        .split('\n')
        .filter((line) => line !== '');
      // Every line parses as JSON with a level word and a time (stdout and stderr alike: there is no other).
      const events = lines.map((line) => {
        const event = JSON.parse(line) as Record<string, unknown>;
        expect(event.level, line).toMatch(/^(trace|debug|info|warn|error|fatal)$/);
        expect(new Date(event.time as string).toISOString()).toBe(event.time);
        return event;
      });
      const address = new URL(run!.tokenUrl).pathname.split('/')[2]!;
      // Negative control for the grep below: the secrets were in the traffic the lines describe.
      const tokenCalls = events.filter(
        (event) =>
          event.event === 'request' && event.path === `/runs/${address.slice(0, 6)}…/auth/oauth/token`,
      );
      expect(tokenCalls.length).toBeGreaterThan(1);
      // The run's address is a capability: never whole in a log line.
      for (const line of lines) expect(line).not.toContain(address);
      for (const secret of [run!.clientSecret, apiKey, accessToken!, run!.clientSecret.slice(0, 16)])
        for (const line of lines) expect(line).not.toContain(secret);
      // Every request has an id; stage calls name the run and its partner.
      const requests = events.filter((event) => event.event === 'request');
      for (const request of requests) expect(request.requestId).toEqual(expect.any(String));
      expect(new Set(requests.map((request) => request.requestId)).size).toBe(requests.length);
      for (const call of tokenCalls) {
        expect(call.runId).toBe(run!.id);
        expect(call.partnerId).toBe(partnerId);
        expect(call.stage).toBe('token');
      }
      expect(requests.find((request) => request.requestId === 'req-careless-1')?.path).toBe(
        `/runs/${address.slice(0, 6)}…/auth/oauth/token`,
      );
      expect(events.find((event) => event.event === 'service.started')?.msg).toMatch(/listening on http/);
      expect(events.find((event) => event.event === 'run.judged')).toMatchObject({
        runId: run!.id,
        partnerId,
      });
      expect(events.at(-1)).toMatchObject({ event: 'service.stopping', signal: 'SIGTERM' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the logger writes no field named like a secret, at the top or one level down', () => {
    const { written, logger } = capturedLogger();
    logger.info(
      {
        clientSecret: 's3cr3t-a',
        nested: { authorization: 'Bearer s3cr3t-b', token: 's3cr3t-c' },
        runId: 'run_1',
      },
      'event',
    );
    const [line] = written;
    expect(line).not.toMatch(/s3cr3t/);
    // The control: a field not named like a secret is written as it is.
    expect(JSON.parse(line!)).toMatchObject({ runId: 'run_1', clientSecret: '[redacted]', msg: 'event' });
  });

  it('request lines skip the redaction pass, so they hold only fields of their own, none named like a secret', () => {
    for (const field of requestLineFields) expect(redactedFields).not.toContain(field);
    const { written, logger } = capturedLogger();
    // The control: the request logger does write a secret-named field as it is (the list above is what
    // keeps secrets out of its lines), where the service's logger redacts it.
    requestLogger(logger).info({ token: 's3cr3t-d', runId: 'run_2' }, 'request');
    logger.info({ token: 's3cr3t-e' }, 'event');
    expect(JSON.parse(written[0]!)).toMatchObject({ token: 's3cr3t-d', runId: 'run_2' });
    expect(JSON.parse(written[1]!)).toMatchObject({ token: '[redacted]' });
  });

  /**
   * A process logging through the service's stdout logger (built: `dist/index.js`), its script given as
   * text; its stdout's lines, each with the ms after the start it arrived, and its exit code.
   */
  async function loggingProcess(script: string, until: (lines: string[]) => boolean) {
    const entry = fileURLToPath(new URL('../dist/index.js', import.meta.url));
    const child = spawn(
      process.execPath,
      ['--input-type=module', '-e', `import { createLogger } from ${JSON.stringify(entry)};\n${script}`],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const began = performance.now();
    const lines: string[] = [];
    const arrived: number[] = [];
    let rest = '';
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += String(chunk);
    });
    child.stdout.on('data', (chunk) => {
      const parts = (rest + String(chunk)).split('\n');
      rest = parts.pop()!;
      for (const part of parts) {
        lines.push(part);
        arrived.push(performance.now() - began);
      }
      if (until(lines)) child.kill('SIGTERM');
    });
    const [code] = await once(child, 'exit');
    return { lines: lines.map((line) => JSON.parse(line).msg as string), arrived, code, stderr };
  }

  it('stdout lines are buffered, yet a lone line leaves within the flush interval, and none is lost at an exit or a crash', async () => {
    // A lone line in a process that stays up: written by the periodic flush (a buffer that waited for
    // its size would hold it until the deadline below kills the process, and the test fails).
    const alone = await loggingProcess(
      "const logger = createLogger(); logger.info('alone'); setTimeout(() => {}, 20000);",
      (lines) => lines.length > 0,
    );
    expect(alone.lines).toEqual(['alone']);
    expect(alone.arrived[0]).toBeLessThan(5000);
    expect(logFlushMs).toBeLessThanOrEqual(1000);
    // Lines still buffered at an exit, and at an uncaught error, are written before the process ends.
    const exited = await loggingProcess(
      "const logger = createLogger(); for (let i = 0; i < 3; i += 1) logger.info('line ' + i); setImmediate(() => process.exit(0));",
      () => false,
    );
    expect(exited.lines).toEqual(['line 0', 'line 1', 'line 2']);
    const crashed = await loggingProcess(
      "const logger = createLogger(); logger.info('before the crash'); setImmediate(() => { throw new Error('boom'); });",
      () => false,
    );
    expect(crashed.code).not.toBe(0);
    expect(crashed.stderr).toContain('boom');
    expect(crashed.lines).toEqual(['before the crash']);
  });
});
