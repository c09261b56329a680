import { OTLPLogExporter as JsonExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPLogExporter as ProtoExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addEvidenceReporter } from '../src/index.js';
import { storedExchanges } from './support/evidence.js';
import { type InProcessService, inProcessService } from './support/in-process.js';

// The OpenTelemetry JS SDK's own OTLP/HTTP log exporters (JSON and protobuf), as a gateway would use
// them, sending to a started service: what each stores must be the same exchanges.
let svc: InProcessService;
let key: string;
let partners: string[];

beforeAll(async () => {
  svc = await inProcessService();
  partners = [(await svc.partner('Acme')).partnerId, (await svc.partner('Bolt')).partnerId];
  ({ key } = await addEvidenceReporter(svc.db, 'gateway'));
}, 120_000);
afterAll(async () => {
  await svc?.close();
});

const at = Date.UTC(2026, 10, 2, 9, 30, 0);

/** Logs what a gateway served with the SDK, through `exporter`, and flushes. */
async function report(exporter: JsonExporter | ProtoExporter, partnerId: string): Promise<void> {
  const provider = new LoggerProvider({ processors: [new BatchLogRecordProcessor({ exporter })] });
  const logger = provider.getLogger('production-gateway');
  logger.emit({
    timestamp: new Date(at),
    body: 'token issued',
    attributes: {
      'partner.id': partnerId,
      'http.request.method': 'POST',
      'url.path': '/oauth/token',
      'http.response.status_code': 200,
      'oauth.grant_type': 'client_credentials',
      'oauth.scope.granted': 'loans:read applications:write',
      'oauth.token.expires_in': 3600,
      'token.fingerprint': 'hmac-3f9a',
    },
  });
  logger.emit({
    timestamp: new Date(at + 1500),
    body: 'api call',
    attributes: {
      'partner.id': partnerId,
      'http.request.method': 'GET',
      'url.path': '/v1/loans/42',
      'http.response.status_code': 429,
      'http.response.header.retry-after': ['3'],
      'error.type': 'rate_limited',
      'token.fingerprint': 'hmac-3f9a',
    },
  });
  // A record without partner.id: rejected by the service, the others kept.
  logger.emit({ timestamp: new Date(at + 2000), attributes: { 'url.path': '/v1/loans' } });
  await provider.forceFlush();
  await provider.shutdown();
}

const options = (url: string, secret: string) => ({
  url: `${url}/evidence`,
  headers: { Authorization: `Bearer ${secret}` },
});
const withoutPartner = (rows: Awaited<ReturnType<typeof storedExchanges>>) =>
  rows.map(({ partner_id: _, ...rest }) => rest);

describe("the OpenTelemetry SDK's OTLP/HTTP log exporters", () => {
  it('store the same exchanges over JSON and protobuf', async () => {
    await report(new JsonExporter(options(svc.service.url, key)), partners[0]!);
    await report(new ProtoExporter(options(svc.service.url, key)), partners[1]!);
    const overJson = await storedExchanges(svc.db, partners[0]);
    const overProtobuf = await storedExchanges(svc.db, partners[1]);
    expect(overJson).toEqual([
      expect.objectContaining({
        at,
        kind: 'token',
        method: 'POST',
        path: '/oauth/token',
        status: 200,
        fingerprint: 'hmac-3f9a',
        scopes_granted: ['loans:read', 'applications:write'],
        expires_at: at + 3_600_000,
      }),
      expect.objectContaining({
        at: at + 1500,
        kind: 'api',
        status: 429,
        retry_after_seconds: 3,
        error: 'rate_limited',
      }),
    ]);
    expect(withoutPartner(overProtobuf)).toEqual(withoutPartner(overJson));
  });

  it('store nothing with a key that is not an evidence reporter key (control)', async () => {
    const stranger = (await svc.partner('Cobalt')).partnerId;
    await report(new ProtoExporter(options(svc.service.url, 'pcs_evidence_not-a-key')), stranger);
    await report(new JsonExporter(options(svc.service.url, 'pcs_evidence_not-a-key')), stranger);
    expect(await storedExchanges(svc.db, stranger)).toEqual([]);
  });
});
