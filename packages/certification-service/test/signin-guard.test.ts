import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InProcessService, inProcessService } from './support/in-process.js';

// Guessing reviewer credentials is slowed per client address and overall (429 with Retry-After, before
// the credential is even looked at), counted apart from the audit log, and the audit log pages and
// filters so that no flood hides a decision.

let svc: InProcessService;
beforeAll(async () => {
  svc = await inProcessService({
    trustForwardedFor: true,
    signinLimits: {
      perAddressBurst: 5,
      perAddressRefillSeconds: 600,
      overallBurst: 20,
      overallRefillSeconds: 600,
    },
  });
});
afterAll(async () => {
  await svc?.close();
});

const signin = (credential: string, address: string) =>
  fetch(`${svc.service.url}/signin`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      origin: svc.service.url,
      'content-type': 'application/x-www-form-urlencoded',
      'x-forwarded-for': address,
    },
    body: new URLSearchParams({ credential }),
  });

describe('failed sign-ins', () => {
  let cookie: string;
  let credential: string;

  it('are limited per address, and the limit holds even for the right credential', async () => {
    ({ credential } = await svc.reviewer('Rita Reviewer'));
    // The control: the right credential signs in (from an address that has not failed).
    const ok = await signin(credential, '192.0.2.1');
    expect(ok.status).toBe(303);
    cookie = /pcs_session=[^;]+/.exec(ok.headers.get('set-cookie') ?? '')![0];

    const guesses = [];
    for (let i = 0; i < 5; i += 1)
      guesses.push((await signin(`pcs_reviewer_guess${i}`, '198.51.100.7')).status);
    expect(guesses).toEqual([401, 401, 401, 401, 401]);
    const throttled = await signin(credential, '198.51.100.7');
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await throttled.text()).toContain('Too many failed sign-ins');
    // Another address is not touched by that one's failures.
    expect((await signin(credential, '192.0.2.2')).status).toBe(303);
  });

  it('are limited overall, whatever the addresses', async () => {
    const statuses = [];
    for (let i = 0; i < 20; i += 1)
      statuses.push((await signin('pcs_reviewer_nope', `203.0.113.${i}`)).status);
    // 5 failures spent above, so 15 more reach the overall limit of 20.
    expect(statuses.filter((status) => status === 401)).toHaveLength(15);
    expect(statuses.slice(15)).toEqual([429, 429, 429, 429, 429]);
    expect((await signin('pcs_reviewer_nope', '203.0.113.200')).status).toBe(429);
  });

  it('are counted as aggregated security events, not audit entries', async () => {
    const events = await svc.db.query<{ kind: string; source: string; count: number }>(
      'SELECT kind, source, sum(count)::int AS count FROM security_events GROUP BY kind, source ORDER BY kind, source',
    );
    expect(events.find((e) => e.kind === 'signin.refused' && e.source === '198.51.100.7')?.count).toBe(5);
    expect(events.filter((e) => e.kind === 'signin.refused').reduce((sum, e) => sum + e.count, 0)).toBe(20);
    expect(events.filter((e) => e.kind === 'signin.throttled').reduce((sum, e) => sum + e.count, 0)).toBe(7);
    const audit = await svc.db.query("SELECT id FROM audit_log WHERE action LIKE 'signin.%'");
    expect(audit).toEqual([]);
    const page = await (await fetch(`${svc.service.url}/audit`, { headers: { cookie } })).text();
    expect(page).toContain('Security events');
    expect(page).toMatch(/signin\.refused<\/td><td>20</);
  });

  it('the audit log pages and filters: a decision under 250 newer entries is found', async () => {
    const [partner] = await svc.db.query<{ id: string }>(
      "INSERT INTO partners (id, name, api_key_hash) VALUES ('ptn_audit', 'Audit Co', 'x') RETURNING id",
    );
    await svc.db.query(
      "INSERT INTO audit_log (actor, action, subject, detail) VALUES ('reviewer:rev_x', 'partner.approved', $1, '{}')",
      [partner!.id],
    );
    await svc.db.query(
      "INSERT INTO audit_log (actor, action, subject, detail) SELECT 'partner:ptn_flood', 'run.created', 'run_' || g, '{}' FROM generate_series(1, 250) g",
    );
    const get = async (path: string) =>
      (await fetch(`${svc.service.url}${path}`, { headers: { cookie } })).text();
    const first = await get('/ui/audit');
    // The negative control: unfiltered, the newest page does not show it (the flood would hide it).
    expect(first).not.toContain('partner.approved</td>');
    const logTable = first.slice(0, first.indexOf('Security events'));
    expect((logTable.match(/<tr><td>/g) ?? []).length).toBe(100);
    const filtered = await get('/ui/audit?action=partner.approved');
    expect(filtered).toContain('partner.approved</td>');
    expect(filtered).not.toContain('run.created</td>');
    // Paging through the unfiltered log reaches it too.
    let path = '/ui/audit';
    let found = false;
    for (let pages = 0; pages < 10 && !found; pages += 1) {
      const text = await get(path);
      found = text.includes('partner.approved</td>');
      const older = /href="(\/ui\/audit\?before=\d+[^"]*)"/.exec(text);
      if (!older) break;
      path = older[1]!.replaceAll('&amp;', '&');
    }
    expect(found).toBe(true);
    // A hostile filter is ignored, not an error.
    const hostile = await fetch(`${svc.service.url}/ui/audit?action=%00%ED%A0%80&before=-1`, {
      headers: { cookie },
    });
    expect(hostile.status).toBe(200);
  });
});
