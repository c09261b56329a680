import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uiRedirects } from '../src/ui/addresses.js';
import { attestedRun, type InProcessService, inProcessService } from './support/in-process.js';
import { reviewerForms } from './support/reviewer-forms.js';

// The reviewer pages have one address scheme, /ui/…; the old addresses and the bare roots redirect to
// their page (308, GET and HEAD, the query kept), and every link of every page points at a /ui/ address.
describe('the reviewer UI as one site: /ui/… addresses', () => {
  let svc: InProcessService;
  let url: string;
  let partnerId: string;
  let runId: string;
  let forms: Awaited<ReturnType<typeof reviewerForms>>;
  let cookie: string;
  beforeAll(async () => {
    svc = await inProcessService();
    url = svc.service.url;
    partnerId = (await svc.partner('Address Lending')).partnerId;
    runId = await attestedRun(svc.db, partnerId);
    const { credential } = await svc.reviewer('Rita');
    forms = await reviewerForms(url, credential);
    const signin = await fetch(`${url}/signin`, {
      method: 'POST',
      redirect: 'manual',
      headers: { origin: url, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ credential }),
    });
    expect(signin.status).toBe(303);
    expect(signin.headers.get('location')).toBe('/ui/partners');
    cookie = (signin.headers.get('set-cookie') ?? '').split(';')[0]!;
  });
  afterAll(async () => {
    await svc?.close();
  });

  it.each([
    ['/', '/ui/partners'],
    ['/ui', '/ui/partners'],
    ['/partners', '/ui/partners'],
    ['/partners/PID', '/ui/partners/PID'],
    ['/partners/PID/production', '/ui/partners/PID/production'],
    ['/audit?action=signin', '/ui/audit?action=signin'],
    ['/webhooks', '/ui/webhooks'],
    ['/runs/RID', '/ui/runs/RID'],
  ])('GET and HEAD %s redirect 308 to %s, signed in or not', async (from, to) => {
    const fill = (path: string) => path.replace('PID', partnerId).replace('RID', runId);
    for (const method of ['GET', 'HEAD'])
      for (const headers of [{}, { cookie }]) {
        const answer = await fetch(`${url}${fill(from)}`, { method, redirect: 'manual', headers });
        expect(answer.status, `${method} ${from}`).toBe(308);
        expect(answer.headers.get('location')).toBe(fill(to));
      }
  });

  it('each canonical address answers its page to the signed-in reviewer', async () => {
    for (const path of [
      '/ui/partners',
      `/ui/partners/${partnerId}`,
      `/ui/partners/${partnerId}/production`,
      `/ui/runs/${runId}`,
      '/ui/webhooks',
      '/ui/audit',
    ]) {
      const answer = await forms.get(path);
      expect(answer.status, path).toBe(200);
    }
  });

  it('every link and form of the pages points at a /ui/ address (or sign-in, sign-out, the stylesheet)', async () => {
    const pages = [
      '/ui/partners',
      `/ui/partners/${partnerId}`,
      `/ui/partners/${partnerId}/production`,
      `/ui/runs/${runId}`,
      '/ui/webhooks',
      '/ui/audit',
    ];
    const old: string[] = [];
    for (const path of pages) {
      const html = (await forms.get(path)).text;
      for (const [, target] of html.matchAll(/(?:href|action)="(\/[^"]*)"/g))
        if (!/^\/(ui\/|ui\.css|signin|signout|api\/)/.test(target!)) old.push(`${path}: ${target}`);
    }
    expect(old).toEqual([]);
  });

  it('controls: an unknown address is still 404, and a redirect is for GET and HEAD only', async () => {
    for (const path of ['/nothing-here', '/ui/nothing-here', '/partners/a/b/c', '/auditing']) {
      const answer = await fetch(`${url}${path}`, { redirect: 'manual', headers: { cookie } });
      expect(answer.status, path).toBe(404);
    }
    const posted = await fetch(`${url}/audit`, { method: 'POST', redirect: 'manual' });
    expect(posted.status).not.toBe(308);
    expect(posted.headers.get('location')).toBeNull();
    expect(uiRedirects.every(({ from }) => !from.startsWith('/ui/'))).toBe(true);
  });
});
