import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import parsePrometheusTextFormat, { type Family } from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, api, type CreatedRun, type ServeProcess, startServe } from './support/service.js';

let dir: string;
let apiKey: string;
let service: ServeProcess;
let metricsUrl: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'pcs-metrics-'));
  apiKey = (await admin('add-partner', 'Metered Lending', { cwd: dir })).apiKey!;
  await admin('add-reviewer', 'Rita Reviewer', { cwd: dir });
  service = await startServe({ cwd: dir, args: ['--metrics-port', '0'] });
  const started = service
    .output()
    .split('\n')
    .map((line) => {
      try {
        return JSON.parse(line) as { event?: string; metricsUrl?: string };
      } catch {
        return {};
      }
    })
    .find((line) => line.event === 'service.started');
  metricsUrl = started?.metricsUrl ?? '';
});
afterAll(async () => {
  await service?.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * One scrape, every line read by the parser. Each family's HELP and TYPE lines go to it with the family;
 * each sample line goes to it alone (the parser merges a histogram's labelled series into one, so whole
 * histograms are not given to it) and must come back as exactly one sample, its labels and value read.
 */
async function scrape(): Promise<{ text: string; families: Family[]; samples: Sample[] }> {
  const response = await fetch(metricsUrl);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await response.text();
  expect(text.endsWith('\n')).toBe(true);
  const families: Family[] = [];
  const samples: Sample[] = [];
  for (const block of text.split(/(?=^# HELP )/m)) {
    const [help, type, ...lines] = block.split('\n').filter((line) => line !== '');
    expect(help, block).toMatch(/^# HELP [a-z_][a-z0-9_]* \S/);
    expect(type, block).toMatch(/^# TYPE [a-z_][a-z0-9_]* (counter|gauge|histogram|summary)$/);
    const [family, ...more] = parsePrometheusTextFormat(`${help}\n${type}\n`);
    expect(more).toEqual([]);
    families.push(family!);
    for (const line of lines) {
      const parsed = parsePrometheusTextFormat(`${line}\n`);
      expect(parsed, line).toHaveLength(1);
      expect(parsed[0]!.metrics, line).toHaveLength(1);
      const [sample] = parsed[0]!.metrics;
      expect(parsed[0]!.name.startsWith(family!.name), line).toBe(true);
      expect(Number.isNaN(Number(sample!.value)), line).toBe(false);
      samples.push({ name: parsed[0]!.name, labels: sample!.labels ?? {}, value: Number(sample!.value) });
    }
  }
  for (const family of families) {
    expect(family.name).toMatch(/^[a-z_][a-z0-9_]*$/);
    if (family.type === 'COUNTER') expect(family.name).toMatch(/_total$/);
    if (family.type === 'HISTOGRAM' && family.name !== 'certification_db_batch_size')
      expect(family.name).toMatch(/_(seconds|bytes)$/);
  }
  return { text, families, samples };
}

/** A sample's value (a histogram's count), 0 when the series does not exist yet. */
function value(scraped: { samples: Sample[] }, name: string, labels: Record<string, string> = {}): number {
  const found = scraped.samples.filter(
    (item) =>
      (item.name === name || item.name === `${name}_count`) &&
      Object.entries(labels).every(([key, wanted]) => item.labels[key] === wanted),
  );
  return found.reduce((total, item) => total + item.value, 0);
}

describe('GET /metrics on its own port', () => {
  it('is served on 127.0.0.1 only when asked for, not on the service port', async () => {
    expect(metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect(new URL(metricsUrl).port).not.toBe(new URL(service.url).port);
    expect((await fetch(`${service.url}/metrics`)).status).toBe(404);
    expect((await fetch(metricsUrl.replace(/\/metrics$/, '/other'))).status).toBe(404);
    // Without --metrics-port, no metrics anywhere (the start-up line names none).
    const other = mkdtempSync(join(tmpdir(), 'pcs-metrics-off-'));
    const plain = await startServe({ cwd: other });
    try {
      expect(plain.output()).not.toContain('metricsUrl');
      expect((await fetch(`${plain.url}/metrics`)).status).toBe(404);
    } finally {
      await plain.stop();
      rmSync(other, { recursive: true, force: true });
    }
  });

  it('the parser refuses a line that is not the text format (so that a pass means every line parsed)', () => {
    expect(() => parsePrometheusTextFormat('certification_runs{state=open} 1\n')).toThrow(/invalid line/);
    expect(parsePrometheusTextFormat('certification_runs{state="open"} 1\n')[0]!.metrics[0]!.value).toBe('1');
  });

  it('parses line by line, and its counters move with real traffic (and only those that should)', async () => {
    const before = await scrape();
    expect(before.families.map((family) => family.name)).toEqual(
      expect.arrayContaining([
        'certification_runs',
        'certification_stage_requests_total',
        'certification_stage_added_latency_seconds',
        'certification_judge_duration_seconds',
        'certification_db_batch_size',
        'certification_db_batch_wait_seconds',
        'certification_signin_failures_total',
        'process_resident_memory_bytes',
        'nodejs_heap_size_used_bytes',
      ]),
    );

    const created = await api(service.url, apiKey, 'POST', '/api/runs', { scenarios: [], ttlSeconds: 60 });
    expect(created.status).toBe(201);
    const run = created.json() as CreatedRun;
    const tokenRequest = (secret: string) =>
      fetch(run.tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: run.clientId,
          client_secret: secret,
          audience: run.audience,
        }),
      });
    const good = await tokenRequest(run.clientSecret);
    expect(good.status).toBe(200);
    const token = (await good.json()) as { access_token: string; partnerId?: string };
    const refused = await tokenRequest('not-the-secret');
    expect(refused.status).toBe(401);
    const loans = `${run.baseUrl}/v3/partner/${token.partnerId ?? 'p'}/loans?limit=1`;
    const call = await fetch(loans, { headers: { authorization: `Bearer ${token.access_token}` } });
    expect(call.status).toBe(200);
    const unauthorised = await fetch(loans);
    expect(unauthorised.status).toBe(401);
    const signin = await fetch(`${service.url}/signin`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: service.url },
      body: new URLSearchParams({ credential: 'not-a-credential' }),
    });
    expect(signin.status).toBe(401);
    const finished = await api(service.url, apiKey, 'POST', `/api/runs/${run.id}/finish`, {
      journeyExitCode: 0,
    });
    expect(finished.status).toBe(200);

    const after = await scrape();
    const moved = (name: string, labels: Record<string, string> = {}) =>
      value(after, name, labels) - value(before, name, labels);
    const requests = 'certification_stage_requests_total';
    expect(moved(requests, { kind: 'token', code: '200' })).toBe(1);
    expect(moved(requests, { kind: 'token', code: '401' })).toBe(1);
    expect(moved(requests, { kind: 'api', code: '200' })).toBe(1);
    expect(moved(requests, { kind: 'api', code: '401' })).toBe(1);
    // Negative control: a series the traffic did not touch stays where it was, so that the deltas above
    // are the traffic's, not a scrape that counts anything.
    expect(moved(requests, { kind: 'token', code: '503' })).toBe(0);
    expect(moved(requests, { kind: 'other' })).toBe(0);
    expect(moved('certification_stage_added_latency_seconds', { kind: 'token' })).toBe(2);
    expect(moved('certification_judge_duration_seconds', { outcome: 'judged' })).toBe(1);
    expect(moved('certification_judge_duration_seconds', { outcome: 'failed' })).toBe(0);
    expect(moved('certification_signin_failures_total', { reason: 'refused' })).toBe(1);
    expect(moved('certification_db_batch_size', { batch: 'record' })).toBeGreaterThanOrEqual(1);
    expect(moved('certification_db_batch_wait_seconds', { batch: 'record' })).toBeGreaterThanOrEqual(1);
    expect(moved('certification_http_requests_total', { area: 'api', code: '201' })).toBe(1);
    expect(value(after, 'certification_runs', { state: 'judged' })).toBe(1);
    expect(value(after, 'certification_runs', { state: 'open' })).toBe(0);
    expect(value(after, 'process_resident_memory_bytes')).toBeGreaterThan(1_000_000);

    // No label holds anything of a run or a partner.
    for (const secret of [run.id, run.clientId, run.clientSecret, apiKey, token.access_token])
      expect(after.text).not.toContain(secret);
  });
});
