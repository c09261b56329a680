import { describe, expect, it } from 'vitest';
import { Redactor, Secret } from '../../src/common/redact.js';
import { type Check, defineCheck, passed } from '../../src/server/check.js';
import { CheckContext } from '../../src/server/context.js';
import { HttpProbe } from '../../src/server/http/probe.js';
import { runChecks } from '../../src/server/runner.js';
import { startServer } from '../helpers.js';

function context(): CheckContext {
  const redactor = new Redactor();
  redactor.addSecret('super-secret-value', '$PARTNER_CLIENT_SECRET');
  return new CheckContext({
    target: {
      authUrl: 'http://127.0.0.1:1',
      tokenUrl: 'http://127.0.0.1:1/oauth/token',
      baseUrl: 'http://127.0.0.1:2',
      audience: 'http://127.0.0.1:2',
      clientId: new Secret('client-id'),
      clientSecret: new Secret('super-secret-value'),
    },
    settings: {
      allowWrites: false,
      expectScopes: undefined,
      maxExpiryWaitSeconds: 20,
      foreignPartnerId: undefined,
      otherClient: undefined,
      jwksUrl: undefined,
    },
    probe: new HttpProbe(),
    redactor,
    exchanges: [],
    now: Date.now,
    sleep: async () => {},
  });
}

const base = {
  title: 't',
  category: 'token-endpoint',
  severity: 'must',
  reference: 'RFC 6749 §5.1',
  citation: 'RFC 6749 §5.1: "…"',
  precondition: 'none',
  records: 'nothing',
  fix: 'do the thing',
} as const;

describe('runChecks', () => {
  it('runs at most `concurrency` checks at once, final ones after the rest, results in catalogue order', async () => {
    let running = 0;
    let peak = 0;
    const order: string[] = [];
    const slow = (id: string, final = false): Check =>
      defineCheck({
        ...base,
        id,
        final,
        async run() {
          running += 1;
          peak = Math.max(peak, running);
          await new Promise((resolve) => setTimeout(resolve, 20));
          running -= 1;
          order.push(id);
          return passed(id);
        },
      });
    const checks = [slow('z-final', true), slow('a'), slow('b'), slow('c'), slow('d')];
    const results = await runChecks(checks, context(), { concurrency: 2 });
    expect(peak).toBe(2);
    expect(order.at(-1)).toBe('z-final');
    expect(results.map((r) => r.id)).toEqual(['z-final', 'a', 'b', 'c', 'd']);
    // None of them judged an exchange: a pass that verified nothing is reported as not verified.
    expect(results.every((r) => r.status === 'skipped' && r.durationMs >= 0)).toBe(true);
    expect(results[1]!.details).toBe('not verified: the check judged no exchange in this run (a)');
  });

  it('records the exchanges a check sent or cited as its evidence, kept apart between concurrent checks', async () => {
    const server = await startServer((req, res) => {
      res.writeHead(req.url === '/x' ? 200 : 401, {
        'content-type': 'application/json',
        'www-authenticate': 'Bearer error="invalid_token"',
      });
      res.end('{"token":"eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.","secret":"super-secret-value"}');
    });
    try {
      const ctx = context();
      const probing = (id: string, path: string): Check =>
        defineCheck({
          ...base,
          id,
          async run(c) {
            await c.probe.send({
              method: 'GET',
              url: `${server.url}${path}`,
              headers: { authorization: 'Bearer super-secret-value' },
            });
            await new Promise((resolve) => setTimeout(resolve, 10));
            return passed(id);
          },
        });
      const results = await runChecks([probing('one', '/x'), probing('two', '/y')], ctx, { concurrency: 2 });
      expect(
        results.map((r) => [r.id, r.status, r.evidence.map((e) => `${e.method} ${e.url} ${e.status}`)]),
      ).toEqual([
        ['one', 'passed', [`GET ${server.url}/x 200`]],
        ['two', 'passed', [`GET ${server.url}/y 401`]],
      ]);
      expect(results[1]!.evidence[0]).toMatchObject({
        requestHeaders: { authorization: 'Bearer $PARTNER_CLIENT_SECRET' },
        responseHeaders: {
          'content-type': 'application/json',
          'www-authenticate': 'Bearer error="invalid_token"',
        },
        responseBody: '{"token":"…J4In0.","secret":"$PARTNER_CLIENT_SECRET"}',
      });
      expect(results[0]!.evidenceOmitted).toBe(0);
    } finally {
      await server.close();
    }
  });

  it('turns a throwing check into "errored" with one redacted line', async () => {
    const boom = defineCheck({
      ...base,
      id: 'boom',
      async run() {
        throw new Error('leaked super-secret-value and eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.');
      },
    });
    const [result] = await runChecks([boom], context());
    expect(result).toMatchObject({
      id: 'boom',
      status: 'errored',
      details: 'the check could not complete: leaked $PARTNER_CLIENT_SECRET and …J4In0.',
    });
  });
});
