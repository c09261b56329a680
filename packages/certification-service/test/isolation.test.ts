import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InProcessService, inProcessService } from './support/in-process.js';
import { api, type CreatedRun, runToken } from './support/service.js';

let svc: InProcessService;
let a: { partnerId: string; apiKey: string };
let b: { partnerId: string; apiKey: string };
let runA: CreatedRun;
let runB: CreatedRun;
let judgedA: CreatedRun;

const tokenFor = (run: CreatedRun, id = run.clientId, secret = run.clientSecret) =>
  runToken(run, { client_id: id, client_secret: secret, scope: 'read:loans' });

beforeAll(async () => {
  svc = await inProcessService({ limits: { maxOpenRunsPerPartner: 3, maxRunsPerHour: 4 } });
  a = await svc.partner('Partner A');
  b = await svc.partner('Partner B');
  runA = (await api(svc.service.url, a.apiKey, 'POST', '/api/runs', {})).json();
  runB = (await api(svc.service.url, b.apiKey, 'POST', '/api/runs', {})).json();
  judgedA = (await api(svc.service.url, a.apiKey, 'POST', '/api/runs', {})).json();
  expect((await api(svc.service.url, a.apiKey, 'POST', `/api/runs/${judgedA.id}/finish`, {})).status).toBe(
    200,
  );
});
afterAll(() => svc.close());

describe('a partner key reaches only its own runs', () => {
  const endpoints = (run: string) =>
    [
      ['GET', `/api/runs/${run}`],
      ['POST', `/api/runs/${run}/finish`],
      ['GET', `/api/runs/${run}/report.html`],
      ['GET', `/api/runs/${run}/session`],
      ['GET', `/api/runs/${run}/attestation`],
    ] as const;

  it('every run endpoint, both directions: the other partner gets 404, never the run', async () => {
    for (const [owner, other, run] of [
      [a, b, judgedA],
      [b, a, runB],
    ] as const) {
      for (const [method, path] of endpoints(run.id)) {
        const refused = await api(
          svc.service.url,
          other.apiKey,
          method,
          path,
          method === 'POST' ? {} : undefined,
        );
        expect(refused.status, `${method} ${path} by the other partner`).toBe(404);
        expect(refused.headers.get('content-type')).toBe('application/problem+json');
        expect(refused.text).not.toContain(run.clientId);
      }
      // The owner reaches it (the control: the 404s above are not a broken route).
      const own = await api(svc.service.url, owner.apiKey, 'GET', `/api/runs/${run.id}`);
      expect(own.status).toBe(200);
      expect(own.json().id).toBe(run.id);
    }
    // The list names only one's own runs.
    const listA = (await api(svc.service.url, a.apiKey, 'GET', '/api/runs'))
      .json()
      .runs.map((run: { id: string }) => run.id);
    expect(listA).toContain(runA.id);
    expect(listA).not.toContain(runB.id);
    // The owner of a judged run gets each artefact.
    for (const [method, path] of endpoints(judgedA.id).filter(([method]) => method === 'GET'))
      expect((await api(svc.service.url, a.apiKey, method, path)).status, path).toBe(200);
  });

  it('no key → 401 with a Bearer challenge; an unknown key → 401 invalid_token; on every endpoint', async () => {
    for (const [method, path] of [
      ['POST', '/api/runs'],
      ['GET', '/api/runs'],
      ...endpoints(runA.id),
    ] as const) {
      const none = await api(svc.service.url, undefined, method, path, method === 'POST' ? {} : undefined);
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
      const wrong = await api(svc.service.url, `${a.apiKey}x`, method, path);
      expect(wrong.status).toBe(401);
      expect(wrong.headers.get('www-authenticate')).toContain('invalid_token');
    }
  });
});

describe("a run's client credentials work on that run only, and only until it ends", () => {
  it('its own token endpoint issues; another run’s refuses its credentials; an ended run answers 404', async () => {
    expect((await tokenFor(runA)).status).toBe(200);
    // Run B's token endpoint, run A's credentials.
    const crossed = await tokenFor(runB, runA.clientId, runA.clientSecret);
    expect(crossed.status).toBe(401);
    // A token of run A on run B's API.
    const token = await (await tokenFor(runA)).json();
    const call = await fetch(`${runB.baseUrl}/v3/partner/${token.partnerId}/loans`, {
      headers: { authorization: `Bearer ${token.access_token}` },
    });
    expect(call.status).toBe(401);
    // The judged run: its addresses answer nothing.
    const ended = await tokenFor(judgedA);
    expect(ended.status).toBe(404);
  });
});

describe('limits and bad input', () => {
  it('every body is capped and validated; errors are problem+json that say what to do', async () => {
    const big = await api(
      svc.service.url,
      a.apiKey,
      'POST',
      '/api/runs',
      `{"integration":{"name":"${'x'.repeat(20_000)}"}}`,
    );
    expect(big.status).toBe(413);
    const cases: Array<[unknown, RegExp]> = [
      [{ ttlSeconds: 0 }, /ttlSeconds/],
      [{ scenarios: ['meteor'] }, /scenarios/],
      [{ scopes: ['admin:all'] }, /scopes/],
      [{ integration: { name: 'a\u001b[2Jb' } }, /control characters/],
      [{ surprise: true }, /surprise|Unrecognized/i],
      ['{not json', /not valid JSON/],
    ];
    for (const [body, message] of cases) {
      const refused = await api(svc.service.url, a.apiKey, 'POST', '/api/runs', body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.headers.get('content-type')).toBe('application/problem+json');
      const problem = refused.json();
      expect(problem.status).toBe(400);
      expect(`${problem.title} ${problem.detail}`).toMatch(message);
    }
    const notJson = await fetch(`${svc.service.url}/api/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.apiKey}`, 'content-type': 'text/plain' },
      body: '{}',
    });
    expect(notJson.status).toBe(415);
  });

  it('open runs per partner and runs per hour are limited, with Retry-After', async () => {
    // A has runA open (judgedA is judged): two more reach the limit of 3, the next is refused.
    const extra1 = await api(svc.service.url, a.apiKey, 'POST', '/api/runs', {});
    const extra2 = await api(svc.service.url, a.apiKey, 'POST', '/api/runs', {});
    expect([extra1.status, extra2.status]).toEqual([201, 201]);
    const refused = await api(svc.service.url, a.apiKey, 'POST', '/api/runs', {});
    expect(refused.status).toBe(429);
    expect(refused.json().title).toBe('Too many open runs');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    // B is not limited by A's runs.
    expect((await api(svc.service.url, b.apiKey, 'POST', '/api/runs', {})).status).toBe(201);
    // Finishing frees a slot, but A has now created 4 runs this hour (the limit): the hourly limit holds.
    await api(svc.service.url, a.apiKey, 'POST', `/api/runs/${extra1.json().id}/finish`, {});
    const hourly = await api(svc.service.url, a.apiKey, 'POST', '/api/runs', {});
    expect(hourly.status).toBe(429);
    expect(hourly.json().title).toBe('Too many runs created');
  });

  it('API keys, reviewer credentials and session tokens are stored hashed; nothing secret reaches the log', async () => {
    const reviewer = await svc.reviewer('Rita');
    const dump = JSON.stringify([
      await svc.db.query('SELECT * FROM partners'),
      await svc.db.query('SELECT * FROM reviewers'),
      await svc.db.query('SELECT * FROM audit_log'),
    ]);
    expect(dump).not.toContain(a.apiKey);
    expect(dump).not.toContain(reviewer.credential);
    expect(dump).toContain(a.partnerId);
    // A judged run keeps no usable credential of its stage.
    const [row] = await svc.db.query<{ client_secret: string | null; signing_key: unknown }>(
      'SELECT client_secret, signing_key FROM runs WHERE id = $1',
      [judgedA.id],
    );
    expect(row).toEqual({ client_secret: null, signing_key: null });
    const log = svc.lines.join('\n');
    for (const secret of [a.apiKey, b.apiKey, runA.clientSecret, judgedA.clientSecret])
      expect(log).not.toContain(secret);
    expect(log).toContain(judgedA.id);
  });
});

describe('hostile bytes in a call', () => {
  it('a body with NUL characters is answered by the API, not 502, and recorded with them visible', async () => {
    const token = await (await tokenFor(runB)).json();
    const call = await fetch(`${runB.baseUrl}/v3/partner/${token.partnerId}/loans`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token.access_token}`, 'content-type': 'application/json' },
      body: '{"amount":"1\u0000000"}',
    });
    expect(call.status).not.toBe(502);
    expect((await api(svc.service.url, b.apiKey, 'POST', `/api/runs/${runB.id}/finish`, {})).status).toBe(
      200,
    );
    const session = (await api(svc.service.url, b.apiKey, 'GET', `/api/runs/${runB.id}/session`)).json();
    const posted = session.exchanges.find(
      (exchange: { server: string; method: string }) =>
        exchange.server === 'api' && exchange.method === 'POST',
    );
    expect(posted.status).toBe(call.status);
    expect(posted.body.text).toBe('{"amount":"1\\u0000000"}');
  });
});
