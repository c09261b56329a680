import { inspect } from 'node:util';
import { type FaultName, startMock } from '@partner-lending/mock';
import { describe, expect, it } from 'vitest';
import type { Report } from '../../src/common/report.js';
import { ConformanceError } from '../../src/errors.js';
import { HttpProbe } from '../../src/server/http/probe.js';
import { runConformance, runConformanceDetailed, writeGuard } from '../../src/server/run.js';
import { sharedSigningKey } from '../helpers.js';

async function usage(options: Parameters<typeof runConformance>[0]): Promise<string> {
  const error = await runConformance(options).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ConformanceError);
  expect((error as ConformanceError).code).toBe('ERR_USAGE');
  return (error as ConformanceError).message;
}

describe('runConformance', () => {
  it('validates its options before touching the network', async () => {
    expect(await usage({ only: ['nope'] })).toMatch(
      /^--only: unknown check id nope\. Known ids: token-success-response, /,
    );
    expect(await usage({ authUrl: 'https://a' })).toBe(
      '--auth-url and --base-url go together: give both to test a target, or neither to test the embedded mock.',
    );
    expect(await usage({ authUrl: 'https://a', baseUrl: 'https://b' })).toBe(
      'PARTNER_CLIENT_ID and PARTNER_CLIENT_SECRET must be set to test a target (secrets are never flags).',
    );
    expect(
      await usage({ authUrl: 'http://auth.example', baseUrl: 'https://b', clientId: 'x', clientSecret: 'y' }),
    ).toBe(
      '--auth-url uses plain http to auth.example: the client secret would travel unencrypted. Use https (http is allowed for loopback only).',
    );
    expect(await usage({ expectScopes: ['read:everything'] })).toMatch(
      /^--expect-scopes: unknown scope read:everything\./,
    );
    expect(await usage({ audience: 'not a url' })).toBe(
      '--audience is not an http(s) URL: "not a url". Expected the base address of the partner API, e.g. https://api.example.com (API documentation §2.1: the audience identifies the API).',
    );
    expect(await usage({ only: ['token-no-store'], skip: ['token-no-store'] })).toBe(
      '--only and --skip together select no check to run (token-no-store minus token-no-store); a run that checks nothing cannot pass. Remove the ids from --skip or widen --only.',
    );
    const withPassword = await usage({
      authUrl: 'https://u:hunter2-pw@a.example',
      baseUrl: 'https://b.example',
      clientId: 'x',
      clientSecret: 'y',
    });
    expect(withPassword).not.toContain('hunter2');
    expect(await usage({ otherClientId: 'x' })).toMatch(
      /^PARTNER_OTHER_CLIENT_ID and PARTNER_OTHER_CLIENT_SECRET go together/,
    );
    expect(await usage({ mock: { faults: ['api-be-nice' as never] } })).toMatch(
      /^the embedded mock did not start: Unknown fault "api-be-nice"\./,
    );
  });

  it('reports --skip as skipped, runs only --only, and keeps secrets and tokens out of the report', async () => {
    const clients = [
      {
        partnerId: 'p-one',
        clientId: 'client-one-id',
        clientSecret: 'client-one-secret-xyz',
        authorizedScopes: ['read:loans'],
      },
      {
        partnerId: 'p-two',
        clientId: 'client-two-id',
        clientSecret: 'client-two-secret-xyz',
        authorizedScopes: ['read:loans'],
      },
    ];
    const seen: string[] = [];
    const { report, target } = await runConformanceDetailed({
      // Faults that put the token in failing curl lines (query string) and the secret in a form.
      mock: {
        clients,
        faults: ['api-accept-query-token', 'token-accept-wrong-secret'],
        signingKey: await sharedSigningKey(),
      },
      only: ['bearer-query-token', 'token-wrong-secret', 'token-no-store'],
      skip: ['token-no-store'],
      onCheckResult: (result) => seen.push(result.id),
    });
    expect(report.checks.map((c) => [c.id, c.status])).toEqual([
      ['token-wrong-secret', 'failed'],
      ['token-no-store', 'skipped'],
      ['bearer-query-token', 'failed'],
    ]);
    expect(seen.sort()).toEqual(['bearer-query-token', 'token-no-store', 'token-wrong-secret']);
    expect(report).toMatchObject({
      schemaVersion: 3,
      mode: 'server',
      certify: false,
      tool: { name: '@partner-lending/conformance' },
      summary: { failed: 2, skipped: 1 },
    });
    expect(target.kind).toBe(
      'embedded mock (deployed; faults: api-accept-query-token, token-accept-wrong-secret)',
    );
    const text = `${JSON.stringify(report)}${inspect(report, { depth: 9 })}`;
    expect(text).not.toContain('client-one-secret-xyz');
    expect(text).not.toContain('client-one-id');
    expect(text).not.toMatch(/eyJ[\w-]+\.eyJ[\w-]+\.[\w-]{10,}/);
    // A runnable reproduction: the token fetched first with the credentials from the environment.
    expect(report.checks[2]!.details).toMatch(
      /reproduce: TOKEN=\$\(curl -s -X POST 'http:\/\/127\.0\.0\.1:\d+\/oauth\/token' --data-urlencode 'grant_type=client_credentials' --data-urlencode 'client_id='"\$PARTNER_CLIENT_ID" --data-urlencode 'client_secret='"\$PARTNER_CLIENT_SECRET" --data-urlencode 'audience=http:\/\/127\.0\.0\.1:\d+' --data-urlencode 'scope=[a-z: _]+' \| sed -E '[^']+'\)\ncurl -i -X GET 'http:\/\/127\.0\.0\.1:\d+\/v3\/partner\/p-one\/loans\?access_token='"\$TOKEN"/,
    );
  });
});

describe('writes', () => {
  /** Every POST the API received on a create path (any status), and the ones that created (2xx). */
  async function createRequests(
    allowWrites: boolean,
    faults: FaultName[] = [],
  ): Promise<{ sent: string[]; created: string[]; report: Report }> {
    const mock = await startMock({ signingKey: await sharedSigningKey(), faults });
    try {
      const client = mock.clients[0]!;
      const other = mock.clients.find((item) => item.partnerId !== client.partnerId)!;
      const report = await runConformance({
        authUrl: mock.authUrl,
        baseUrl: mock.baseUrl,
        clientId: client.clientId,
        clientSecret: client.clientSecret,
        otherClientId: other.clientId,
        otherClientSecret: other.clientSecret,
        allowWrites,
      });
      const posts = mock
        .requestLog()
        .filter((entry) => entry.server === 'api' && entry.method === 'POST')
        .map((entry) => ({
          line: `${entry.target.replace(/\/partner\/[^/]+\//, '/partner/P/')} ${entry.status}`,
          status: entry.status,
        }));
      return {
        sent: posts.map((post) => post.line),
        created: posts.filter((post) => post.status < 300).map((post) => post.line),
        report,
      };
    } finally {
      await mock.close();
    }
  }

  it('without allowWrites, no create endpoint gets a single request, even from a server that would write', async () => {
    // Faults under which the old suite wrote: a form-body token honoured, no partner isolation, no scope check.
    for (const faults of [
      [],
      ['api-accept-body-token', 'api-skip-partner-isolation', 'api-ignore-scope'],
    ] as FaultName[][]) {
      const { sent, report } = await createRequests(false, faults);
      expect(sent).toEqual([]);
      expect(report.writes).toEqual({ allowed: false, mayHaveCreated: [] });
    }
  });

  it('with allowWrites, the positive control creates once per create endpoint, and the report says so', async () => {
    const { created, report } = await createRequests(true);
    expect(created).toEqual(
      expect.arrayContaining([
        '/v3/partner/P/loan_draft 201',
        '/v3/partner/P/journals 201',
        '/v3/partner/P/repayments 201',
      ]),
    );
    expect(created).toHaveLength(3);
    expect(report.writes.allowed).toBe(true);
    expect(
      report.writes.mayHaveCreated.map((line) => line.replace(/\/partner\/[^/]+\//, '/partner/P/')),
    ).toEqual(
      expect.arrayContaining([
        'POST /v3/partner/P/loan_draft → 201',
        'POST /v3/partner/P/journals → 201',
        'POST /v3/partner/P/repayments → 201',
      ]),
    );
  });

  it('the probe refuses, by construction, a body to a create endpoint without allowWrites', async () => {
    const mock = await startMock({ signingKey: await sharedSigningKey() });
    try {
      const target = { tokenUrl: mock.tokenUrl, baseUrl: mock.baseUrl };
      const guarded = new HttpProbe({ guard: writeGuard(target, false) });
      for (const path of ['loan_draft', 'journals', 'repayments']) {
        const url = `${mock.baseUrl}/v3/partner/someone-else/${path}`;
        for (const body of [{ json: {} }, { form: [['a', 'b']] as [string, string][] }, { body: 'x' }]) {
          const error = await guarded.send({ method: 'POST', url, ...body }).catch((e: unknown) => e);
          expect(error).toMatchObject({ code: 'ERR_WRITE_GUARD' });
        }
      }
      // The read endpoint is not guarded; with allowWrites nothing is.
      await expect(
        guarded.send({ method: 'GET', url: `${mock.baseUrl}/v3/partner/p/loans` }),
      ).resolves.toBeDefined();
      const open = new HttpProbe({ guard: writeGuard(target, true) });
      await expect(
        open.send({ method: 'POST', url: `${mock.baseUrl}/v3/partner/p/loan_draft`, json: {} }),
      ).resolves.toBeDefined();
      expect(
        mock.requestLog().filter((entry) => entry.method === 'POST' && entry.server === 'api'),
      ).toHaveLength(1);
    } finally {
      await mock.close();
    }
  });
});
