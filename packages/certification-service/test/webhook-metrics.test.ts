import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './support/postgres.mjs';
import { api, bin, runCommand, type ServeProcess, startServe } from './support/service.js';

// The webhook delivery metrics, scraped from `serve --metrics-port` after one event (run.judged) goes
// to three endpoints: one that takes it (204), one that refuses it (503) and one where nothing listens.
// With `--webhook-retry-schedule 2,2` the two failing ones use up their three attempts within seconds.

let dir: string;
let service: ServeProcess;
let metricsUrl: string;
let apiKey: string;
const hits = { ok: 0, refusing: 0 };
const servers: Server[] = [];

async function endpoint(status: number, count: keyof typeof hits): Promise<string> {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      hits[count] += 1;
      response.writeHead(status).end();
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}/hooks`;
}

async function admin(...args: string[]): Promise<Record<string, string>> {
  const result = await runCommand(process.execPath, [bin, 'admin', ...args, '--json'], {
    cwd: dir,
    env: { DATABASE_URL: '', SIGNING_KEY_FILE: '' },
  });
  if (result.code !== 0) throw new Error(`admin ${args[0]} failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as Record<string, string>;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'pcs-webhook-metrics-'));
  apiKey = (await admin('add-partner', '--name', 'Metered Lending')).apiKey!;
  await admin('add-webhook', '--url', await endpoint(204, 'ok'), '--events', 'run.judged');
  await admin('add-webhook', '--url', await endpoint(503, 'refusing'), '--events', 'run.judged');
  await admin('add-webhook', '--url', `http://127.0.0.1:${await freePort()}/hooks`, '--events', 'run.judged');
  service = await startServe({
    cwd: dir,
    args: ['--metrics-port', '0', '--log-format', 'json', '--webhook-retry-schedule', '2,2'],
  });
  metricsUrl =
    service
      .output()
      .split('\n')
      .map((line) => {
        try {
          return JSON.parse(line) as { event?: string; metricsUrl?: string };
        } catch {
          return {};
        }
      })
      .find((line) => line.event === 'service.started')?.metricsUrl ?? '';
});
afterAll(async () => {
  await service?.stop();
  for (const server of servers) server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Every sample of one scrape: name, labels, value. */
async function scrape(): Promise<Array<{ name: string; labels: string; value: number }>> {
  const response = await fetch(metricsUrl);
  expect(response.status).toBe(200);
  return (await response.text())
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = /^([a-z_][a-z0-9_]*)(\{[^}]*\})? (\S+)$/.exec(line);
      if (!match) throw new Error(`not a sample line: ${line}`);
      return { name: match[1]!, labels: match[2] ?? '', value: Number(match[3]) };
    });
}

function value(samples: Awaited<ReturnType<typeof scrape>>, name: string, labels = ''): number {
  const found = samples.filter((s) => s.name === name && s.labels.includes(labels));
  if (found.length === 0) throw new Error(`no ${name}${labels} in the scrape`);
  return found.reduce((sum, s) => sum + s.value, 0);
}

describe('webhook delivery metrics on --metrics-port', () => {
  it('count attempts by outcome, time them, and show the outbox, after a delivery and two failures', async () => {
    expect(metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    // Before any event: nothing attempted, nothing in the outbox (the control for what follows).
    const before = await scrape();
    expect(before.some((s) => s.name === 'certification_webhook_attempts_total')).toBe(false);
    expect(value(before, 'certification_webhook_outbox', 'status="pending"')).toBe(0);
    expect(value(before, 'certification_webhook_outbox', 'status="failed"')).toBe(0);
    expect(value(before, 'certification_webhook_deliveries_failed_total')).toBe(0);

    // One judged run: one run.judged event, one delivery per endpoint.
    const run = (await api(service.url, apiKey, 'POST', '/api/runs', {})).json() as { id: string };
    const finished = await api(service.url, apiKey, 'POST', `/api/runs/${run.id}/finish`, {
      journeyExitCode: 0,
    });
    expect(finished.status).toBe(200);
    const deadline = Date.now() + 60_000;
    let after = await scrape();
    let pendingSeen = 0;
    let oldestSeen = 0;
    while (
      Date.now() < deadline &&
      !(
        value(after, 'certification_webhook_outbox', 'status="failed"') === 2 &&
        value(after, 'certification_webhook_outbox', 'status="pending"') === 0 &&
        // The failure is counted once its attempt is recorded: a scrape can fall between the two.
        value(after, 'certification_webhook_deliveries_failed_total') === 2
      )
    ) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      after = await scrape();
      pendingSeen = Math.max(pendingSeen, value(after, 'certification_webhook_outbox', 'status="pending"'));
      oldestSeen = Math.max(oldestSeen, value(after, 'certification_webhook_oldest_pending_seconds'));
    }
    // While the failing ones waited for their retries (4 s or more), the outbox showed them pending.
    expect(pendingSeen).toBeGreaterThanOrEqual(1);
    expect(oldestSeen).toBeGreaterThan(0);
    expect(hits).toEqual({ ok: 1, refusing: 3 });
    expect(value(after, 'certification_webhook_attempts_total', 'outcome="delivered"')).toBe(1);
    expect(value(after, 'certification_webhook_attempts_total', 'outcome="http_error"')).toBe(3);
    expect(value(after, 'certification_webhook_attempts_total', 'outcome="no_answer"')).toBe(3);
    expect(value(after, 'certification_webhook_attempt_duration_seconds_count', 'outcome="delivered"')).toBe(
      1,
    );
    expect(value(after, 'certification_webhook_attempt_duration_seconds_count', 'outcome="http_error"')).toBe(
      3,
    );
    expect(value(after, 'certification_webhook_attempt_duration_seconds_count', 'outcome="no_answer"')).toBe(
      3,
    );
    expect(
      value(after, 'certification_webhook_attempt_duration_seconds_sum', 'outcome="delivered"'),
    ).toBeGreaterThan(0);
    expect(value(after, 'certification_webhook_delivery_lag_seconds_count')).toBe(1);
    expect(value(after, 'certification_webhook_deliveries_failed_total')).toBe(2);
    expect(value(after, 'certification_webhook_outbox', 'status="pending"')).toBe(0);
    expect(value(after, 'certification_webhook_outbox', 'status="failed"')).toBe(2);
    expect(value(after, 'certification_webhook_oldest_pending_seconds')).toBe(0);
    // No label carries an id, a URL or anything a receiver answered.
    for (const sample of after.filter((s) => s.name.startsWith('certification_webhook_')))
      expect(sample.labels).not.toMatch(/127\.0\.0\.1|whk_|msg_|run_/);
    // The log lines do carry the ids: each failed attempt names its webhook, event and attempt, the last
    // one of each delivery as failed (2 deliveries × 3 attempts, the control being that none succeeded).
    // A line is written after its attempt is recorded, and asynchronously: the outbox can show the last
    // failure before its line has reached this process, so the lines are awaited (10 s at most).
    const webhookLines = () =>
      service
        .output()
        .split('\n')
        .flatMap((line) => {
          try {
            return [JSON.parse(line) as Record<string, unknown>];
          } catch {
            return [];
          }
        })
        .filter(
          (line) => String(line.event).startsWith('webhook.') && line.event !== 'webhook.leases_released',
        );
    const linesBy = Date.now() + 10_000;
    while (
      Date.now() < linesBy &&
      webhookLines().filter((line) => line.event === 'webhook.delivery_failed').length < 2
    )
      await new Promise((resolve) => setTimeout(resolve, 50));
    const failures = webhookLines();
    expect(failures.map((line) => line.event).sort()).toEqual([
      ...Array(4).fill('webhook.attempt_failed'),
      ...Array(2).fill('webhook.delivery_failed'),
    ]);
    for (const line of failures) {
      expect(line.webhookId).toMatch(/^whk_/);
      expect(line.eventId).toEqual(expect.any(String));
      expect([1, 2, 3]).toContain(line.attempt);
    }
    expect(failures.filter((line) => line.status === 503)).toHaveLength(3);
  }, 90_000);
});
