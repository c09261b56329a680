import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, api, type CreatedRun, type ServeProcess, startServe } from './support/service.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: { stringValue?: string; intValue?: string | number } }[];
}

/** An OTLP/HTTP receiver (JSON), as a collector would be: every span it was sent, and the resources. */
let receiver: Server;
const spans: OtlpSpan[] = [];
const services: string[] = [];
let receiverUrl: string;
let dir: string;
let apiKey: string;
let service: ServeProcess;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (
        req.method === 'POST' &&
        req.url === '/v1/traces' &&
        /json/.test(req.headers['content-type'] ?? '')
      ) {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: {
            resource: { attributes: { key: string; value: { stringValue?: string } }[] };
            scopeSpans: { spans: OtlpSpan[] }[];
          }[];
        };
        for (const resource of body.resourceSpans) {
          services.push(
            resource.resource.attributes.find((item) => item.key === 'service.name')?.value.stringValue ?? '',
          );
          for (const scope of resource.scopeSpans) spans.push(...scope.spans);
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
      } else {
        res.writeHead(415);
        res.end();
      }
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;
  dir = mkdtempSync(join(tmpdir(), 'pcs-traces-'));
  apiKey = (await admin('add-partner', 'Traced Lending', { cwd: dir })).apiKey!;
  service = await startServe({
    cwd: dir,
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '200',
      OTEL_SERVICE_NAME: 'certification-under-test',
    },
  });
});
afterAll(async () => {
  await service?.stop();
  await new Promise((resolve) => receiver?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

async function until<T>(what: string, probe: () => T | undefined, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`${what} did not arrive in ${ms / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('traces over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set', () => {
  it("a partner's call arrives as a span of the caller's trace, with its stage exchange and database batches", async () => {
    expect(service.output()).toMatch(/"tracing":true/);
    const run = (await api(service.url, apiKey, 'POST', '/api/runs', { scenarios: [] })).json() as CreatedRun;
    const traceId = randomBytes(16).toString('hex');
    const parentId = randomBytes(8).toString('hex');
    const answer = await fetch(run.tokenUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        traceparent: `00-${traceId}-${parentId}-01`,
      },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: run.clientId,
        client_secret: run.clientSecret,
      }),
    });
    expect(answer.status).toBe(200);
    // A call with no traceparent: a trace of its own (the control: not every span lands in the caller's).
    const untraced = await fetch(run.tokenUrl, { method: 'POST', body: 'grant_type=client_credentials' });
    expect(untraced.status).toBe(400);

    const call = await until('the stage span', () =>
      spans.find((span) => span.traceId === traceId && span.name === 'stage token'),
    );
    expect(call.parentSpanId).toBe(parentId);
    expect(call.kind).toBe(2); // SERVER
    const attribute = (span: OtlpSpan, key: string) => {
      const found = span.attributes?.find((item) => item.key === key)?.value;
      return found?.stringValue ?? (found?.intValue !== undefined ? Number(found.intValue) : undefined);
    };
    expect(attribute(call, 'certification.run.id')).toBe(run.id);
    expect(attribute(call, 'http.response.status_code')).toBe(200);
    const batch = await until('the database batch span', () =>
      spans.find((span) => span.traceId === traceId && span.name === 'db batch record'),
    );
    expect(batch.kind).toBe(3); // CLIENT
    expect(attribute(batch, 'db.operation.batch.size')).toBeGreaterThanOrEqual(1);
    // Every span of the caller's trace descends from the caller's span.
    const ofTrace = spans.filter((span) => span.traceId === traceId);
    const ids = new Set([parentId, ...ofTrace.map((span) => span.spanId)]);
    for (const span of ofTrace) expect(ids.has(span.parentSpanId ?? '')).toBe(true);
    const other = await until('the untraced call', () =>
      spans.find(
        (span) => span.name === 'stage token' && attribute(span, 'http.response.status_code') === 400,
      ),
    );
    expect(other.traceId).not.toBe(traceId);
    expect(other.parentSpanId ?? '').toBe('');

    await api(service.url, apiKey, 'POST', `/api/runs/${run.id}/finish`, {});
    const judged = await until('the judge span', () =>
      spans.find((span) => span.name === 'judge run' && attribute(span, 'certification.run.id') === run.id),
    );
    const finish = spans.find((span) => span.spanId === judged.parentSpanId);
    expect(finish?.name).toBe('POST api');
    expect(services).toContain('certification-under-test');
    // No span carries a secret.
    expect(JSON.stringify(spans)).not.toContain(run.clientSecret);
    expect(JSON.stringify(spans)).not.toContain(apiKey);
  });
});
