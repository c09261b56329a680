import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InProcessService, inProcessService } from './support/in-process.js';
import { startPostgres, type ThrowawayPostgres } from './support/postgres.mjs';
import { api, type CreatedRun } from './support/service.js';

// Requests generated from /openapi.json for every operation — as the partner, as another partner, as a
// signed-in reviewer, as nobody and with a made-up key; path ids and bodies from hostile strings (NUL, unpaired surrogates,
// control characters, bad percent-encoding) and arbitrary JSON — on both stores. Any 5xx, any status
// or content type the document does not list for the operation, or an answer that breaks its schema
// fails the property. Bounded: FUZZ_RUNS requests per operation and store (default 30).

const runsPerOperation = Number(process.env.FUZZ_RUNS ?? 30);

let postgres: ThrowawayPostgres;
beforeAll(async () => {
  postgres = await startPostgres();
});
afterAll(async () => {
  await postgres?.stop();
});

type Operation = {
  path: string;
  method: string;
  requestBody?: unknown;
  responses: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }>;
};

/** Percent-encodes a path segment, an unpaired surrogate as the bytes UTF-8 forbids (ED A0 80). */
const segment = (value: string) =>
  [...value].map((char) => (/[\uD800-\uDFFF]/.test(char) ? '%ED%A0%80' : encodeURIComponent(char))).join('');

const hostile = fc.constantFrom(
  '\u0000',
  'run_\u0000',
  '\uD800',
  'x\uDC00y',
  '\u001b[31m',
  '\u007f',
  '%',
  '../../etc/passwd',
  ' ',
  'a'.repeat(300),
  '\u2028',
  '😀',
);
const hostileString = fc.oneof(hostile, fc.string({ unit: 'binary', maxLength: 40 }));

/** A body for createRun/finishRun: near-valid shapes with hostile values, any JSON, or not JSON at all. */
const body = fc.oneof(
  fc
    .record(
      {
        ttlSeconds: fc.oneof(fc.integer(), fc.double(), hostileString),
        longTtlSeconds: fc.oneof(fc.integer({ min: -1, max: 500_000_000 }), fc.constant(400_000_000)),
        scenarios: fc.array(
          fc.oneof(fc.constantFrom('revocation', 'throttle', 'unavailable'), hostileString),
          {
            maxLength: 8,
          },
        ),
        scopes: fc.array(fc.oneof(fc.constantFrom('read:loans'), hostileString), { maxLength: 5 }),
        integration: fc.record({ name: hostileString, version: hostileString }, { requiredKeys: [] }),
        certify: fc.oneof(fc.boolean(), hostileString),
        journeyExitCode: fc.oneof(fc.integer({ min: -300, max: 300 }), fc.constant(null), hostileString),
        [hostileString as unknown as string]: fc.anything(),
      },
      { requiredKeys: [] },
    )
    .map((value) => JSON.stringify(value)),
  fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value)),
  hostileString,
  fc.constant(''),
);

describe.each(['embedded', 'postgres'] as const)('the OpenAPI document is the truth (%s)', (store) => {
  let svc: InProcessService;
  let document: {
    paths: Record<string, Record<string, Operation>>;
    components: { schemas: Record<string, any> };
  };
  const keys: Record<string, string | undefined> = {};
  const ids: string[] = [];
  let reviewerCookie = '';

  beforeAll(async () => {
    svc = await inProcessService({
      tokenDelayMs: 0,
      apiDelayMs: 0,
      limits: { maxOpenRunsPerPartner: 3, maxRunsPerHour: 100_000 },
      fairness: { apiRequestsPerSecond: 100_000, apiConcurrency: 1000 },
      ...(store === 'postgres' && { databaseUrl: await postgres.database(`fuzz_${Date.now() % 1e6}`) }),
    });
    const { url } = svc.service;
    keys.partner = (await svc.partner('Fuzz Co')).apiKey;
    keys.other = (await svc.partner('Other Co')).apiKey;
    keys.nobody = undefined;
    keys.madeUp = 'pcs_key_madeupmadeupmadeupmadeupmadeupmadeupmade';
    // A signed-in reviewer's cookie (the API is the partners': a reviewer there is nobody).
    const { credential } = await svc.reviewer('Fuzz Reviewer');
    const signin = await fetch(`${url}/signin`, {
      method: 'POST',
      redirect: 'manual',
      headers: { origin: url, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ credential }),
    });
    reviewerCookie = /pcs_session=[^;]+/.exec(signin.headers.get('set-cookie') ?? '')![0];
    const judged = (
      await api(url, keys.partner, 'POST', '/api/runs', { scenarios: [] })
    ).json() as CreatedRun;
    await api(url, keys.partner, 'POST', `/api/runs/${judged.id}/finish`, {});
    const open = (await api(url, keys.partner, 'POST', '/api/runs', { scenarios: [] })).json() as CreatedRun;
    ids.push(judged.id, open.id);
    document = (await api(url, undefined, 'GET', '/openapi.json')).json();
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('answers every operation only as documented, never 5xx', async () => {
    const operations: Operation[] = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({ ...operation, path, method })),
    );
    expect(operations.length).toBeGreaterThanOrEqual(9);
    const problems: string[] = [];
    let sent = 0;
    for (const operation of operations) {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom('partner', 'other', 'reviewer', 'nobody', 'madeUp'),
          fc.oneof(fc.constantFrom(...ids), hostileString),
          body,
          fc.constantFrom('application/json', 'text/plain', 'application/json; charset=utf-8', undefined),
          async (who, id, text, type) => {
            const path = operation.path.replace('{id}', segment(id));
            const headers: Record<string, string> = {};
            if (keys[who]) headers.authorization = `Bearer ${keys[who]}`;
            if (who === 'reviewer') headers.cookie = reviewerCookie;
            const withBody = operation.requestBody !== undefined;
            if (withBody && type) headers['content-type'] = type;
            const response = await fetch(`${svc.service.url}${path}`, {
              method: operation.method.toUpperCase(),
              headers,
              ...(withBody && { body: text }),
            });
            sent += 1;
            const answer = await response.text();
            const where = `${operation.method.toUpperCase()} ${path.slice(0, 80)} as ${who} → ${response.status}`;
            const documented = operation.responses[String(response.status)];
            if (response.status >= 500) problems.push(`${where}: a 5xx (${answer.slice(0, 200)})`);
            if (!documented) {
              problems.push(`${where}: status not in the document`);
              return;
            }
            const mediaType = (response.headers.get('content-type') ?? '').split(';')[0]!.trim();
            const content = documented.content ?? {};
            if (Object.keys(content).length > 0 && !(mediaType in content))
              problems.push(
                `${where}: content type ${mediaType} not in the document (${Object.keys(content)})`,
              );
            const ref = content[mediaType]?.schema?.$ref;
            if (mediaType.endsWith('json')) {
              let parsed: any;
              try {
                parsed = JSON.parse(answer);
              } catch {
                problems.push(`${where}: not JSON`);
                return;
              }
              const schema = ref ? document.components.schemas[ref.split('/').at(-1)!] : undefined;
              for (const field of schema?.required ?? [])
                if (!(field in parsed)) problems.push(`${where}: ${field} missing (${ref})`);
              if (mediaType === 'application/problem+json' && parsed.status !== response.status)
                problems.push(`${where}: the problem's status is ${parsed.status}`);
            }
          },
        ),
        { numRuns: runsPerOperation, seed: 3200 + (store === 'postgres' ? 1 : 0) },
      );
    }
    expect(sent).toBe(operations.length * runsPerOperation);
    expect([...new Set(problems)].slice(0, 30)).toEqual([]);
  });

  it('answers a reviewer note with NUL, an escape or DEL 400, and a clean one is not refused for it', async () => {
    const { url } = svc.service;
    const home = await (await fetch(`${url}/`, { headers: { cookie: reviewerCookie } })).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(home)![1]!;
    // The note percent-encoded by hand. (An unpaired surrogate cannot arrive in a form: its bytes are
    // invalid UTF-8, which the form decoder turns into U+FFFD, valid text.)
    const decide = (note: string) =>
      fetch(`${url}/ui/runs/${ids[0]}/decision`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: reviewerCookie, origin: url, 'content-type': 'application/x-www-form-urlencoded' },
        body: `csrf=${encodeURIComponent(csrf)}&decision=rejected&note=${note}`,
      });
    for (const note of ['bad%00note', 'bad%1B%5B31mnote', 'bad%7Fnote'])
      expect((await decide(note)).status, JSON.stringify(note)).toBe(400);
    expect((await svc.db.query('SELECT id FROM decisions')).length).toBe(0);
    // The control: the same form with a clean note is recorded (303).
    expect((await decide('regression%20found%0Ain%20the%20retry%20path')).status).toBe(303);
    expect((await svc.db.query('SELECT id FROM decisions')).length).toBe(1);
  });

  it('would catch an undocumented status (negative control)', () => {
    const createRun = document.paths['/api/runs']!.post!;
    // The checker's rule holds the document to what the service sends: a status the service answers
    // that the document left out is found.
    expect(createRun.responses['418']).toBeUndefined();
    expect(Object.keys(createRun.responses)).toEqual(
      expect.arrayContaining(['201', '400', '401', '413', '415', '429', '503']),
    );
    expect(document.components.schemas.RunRequest.properties.scenarios.uniqueItems).toBe(true);
    expect(document.components.schemas.RunRequest.additionalProperties).toBe(false);
  });
});
