import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addEvidenceReporter } from '../src/evidence/index.js';
import { recordSignedDecision } from '../src/production/decisions/signed.js';
import { addRegisterReader } from '../src/production/register/register.js';
import { attestedRun, type InProcessService, inProcessService } from './support/in-process.js';
import { startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';

// From evidence to consequence through the service as it runs, on both stores: a reporter sends OTLP/HTTP
// logs to POST /evidence, the service's own watch hands them to the production judge, and a partner
// taking a token for every call is suspended under `--on-regression suspend` — the register (signed,
// a higher seq) says so and the partner reads the regression with its evidence; a partner reusing its
// token, reported the same way, stays active (the control).

/** An OTLP AnyValue (JSON encoding) of a string or an integer. */
const anyValue = (value: string | number) =>
  typeof value === 'number' ? { intValue: value } : { stringValue: value };

/** An ExportLogsServiceRequest (JSON encoding): one log record per exchange, attributes as a gateway logs them. */
function otlp(records: Array<{ at: number; attributes: Record<string, string | number> }>): string {
  return JSON.stringify({
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'production-gateway' } }] },
        scopeLogs: [
          {
            scope: { name: 'gateway' },
            logRecords: records.map((record) => ({
              timeUnixNano: `${record.at}000000`,
              body: { stringValue: 'served' },
              attributes: Object.entries(record.attributes).map(([key, value]) => ({
                key,
                value: anyValue(value),
              })),
            })),
          },
        ],
      },
    ],
  });
}

/** A token issue and one API call with it, every 10 s for 55 minutes: a new token per call, or one for all. */
function traffic(partnerId: string, start: number, tokenPerCall: boolean) {
  const records: Array<{ at: number; attributes: Record<string, string | number> }> = [];
  for (let i = 0; i < 330; i += 1) {
    const at = start + i * 10_000;
    const fingerprint = tokenPerCall ? `fp-${i}` : 'fp-one';
    if (tokenPerCall || i === 0)
      records.push({
        at,
        attributes: {
          'partner.id': partnerId,
          'http.request.method': 'POST',
          'url.path': '/oauth/token',
          'http.response.status_code': 200,
          'oauth.grant_type': 'client_credentials',
          'token.fingerprint': fingerprint,
          'oauth.scope.granted': 'loans:read',
          'oauth.token.expires_in': 43_199,
        },
      });
    records.push({
      at: at + 100,
      attributes: {
        'partner.id': partnerId,
        'http.request.method': 'GET',
        'url.path': `/v3/partner/${partnerId}/loans`,
        'http.response.status_code': 200,
        'token.fingerprint': fingerprint,
      },
    });
  }
  return records;
}

const stores: Array<['embedded' | 'postgres']> = [['embedded'], ['postgres']];

describe.each(stores)('from evidence to suspension on the %s store', (store) => {
  let postgres: ThrowawayPostgres | undefined;
  let svc: InProcessService;
  let readerKey: string;
  let reporterKey: string;
  beforeAll(async () => {
    if (store === 'postgres') postgres = await startPostgres();
    svc = await inProcessService({
      ...(postgres && { databaseUrl: await postgres.database('regressions_e2e') }),
      sweepIntervalMs: 3_600_000,
      production: { onRegression: 'suspend' },
    });
    ({ key: readerKey } = await addRegisterReader(svc.db, 'production token endpoint'));
    ({ key: reporterKey } = await addEvidenceReporter(svc.db, 'production gateway'));
  }, 120_000);
  afterAll(async () => {
    await svc?.close();
    await postgres?.stop();
  });

  async function approvedPartner(name: string) {
    const partner = await svc.partner(name);
    const runId = await attestedRun(svc.db, partner.partnerId);
    const { reviewerId } = await svc.reviewer(`Reviewer of ${name}`);
    await svc.db.transaction((tx) =>
      recordSignedDecision(
        tx,
        {
          partnerId: partner.partnerId,
          runId,
          reviewerId,
          decision: 'approved',
          note: 'certified',
          scopes: ['loans:read'],
          validUntil: new Date(Date.now() + 86_400_000),
        },
        svc.service.production,
      ),
    );
    return partner;
  }

  async function entry(partnerId: string) {
    const answer = await fetch(`${svc.service.url}/register/partners/${partnerId}`, {
      headers: { authorization: `Bearer ${readerKey}` },
    });
    expect(answer.status).toBe(200);
    const payload = JSON.parse(
      Buffer.from((await answer.text()).split('.')[1]!, 'base64url').toString('utf8'),
    );
    return { status: payload.partners[0].status as string, seq: payload.seq as number };
  }

  async function report(records: ReturnType<typeof traffic>) {
    for (let at = 0; at < records.length; at += 500) {
      const answer = await fetch(`${svc.service.url}/evidence`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${reporterKey}` },
        body: otlp(records.slice(at, at + 500)),
      });
      expect(answer.status, await answer.text()).toBeLessThan(300);
    }
  }

  it('a token per call suspends the partner; a reused token leaves it active', async () => {
    const careless = await approvedPartner(`Careless ${store}`);
    const careful = await approvedPartner(`Careful ${store}`);
    const before = await entry(careless.partnerId);
    const start = Date.now() - 60 * 60_000;
    await report(traffic(careful.partnerId, start, false));
    await report(traffic(careless.partnerId, start, true));
    // The service's watch runs every second: wait (bounded) for the careless partner's suspension.
    const deadline = Date.now() + 60_000;
    while ((await entry(careless.partnerId)).status !== 'suspended' && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 250));
    const after = await entry(careless.partnerId);
    expect(after.status).toBe('suspended');
    expect(after.seq).toBeGreaterThan(before.seq);
    const listed = (await (
      await fetch(`${svc.service.url}/api/production/regressions`, {
        headers: { authorization: `Bearer ${careless.apiKey}` },
      })
    ).json()) as { regressions: Array<{ check: string; consequence: string; exchanges: unknown[] }> };
    expect(listed.regressions.map((item) => [item.check, item.consequence])).toEqual([
      ['client-token-reuse', 'suspended'],
    ]);
    expect(listed.regressions[0]!.exchanges.length).toBeGreaterThan(0);
    // The control: every exchange of the careful partner was judged, and it stays active.
    const waiting = async () =>
      (await svc.db.query('SELECT 1 FROM evidence_queue WHERE partner_id = $1', [careful.partnerId])).length;
    while ((await waiting()) > 0 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 250));
    expect(await waiting()).toBe(0);
    expect((await entry(careful.partnerId)).status).toBe('active');
    expect(
      await svc.db.query('SELECT id FROM regressions WHERE partner_id = $1', [careful.partnerId]),
    ).toEqual([]);
  }, 120_000);
});
