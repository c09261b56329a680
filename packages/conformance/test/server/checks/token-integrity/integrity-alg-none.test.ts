import { describe, expect, it } from 'vitest';
import { runConformance } from '../../../../src/server/run.js';
import { sharedSigningKey } from '../../../helpers.js';

/** The `alg` of a compact JWS in an `Authorization: Bearer` header, if it is one. */
function algOf(headers: Headers): string | undefined {
  const token = /^Bearer (\S+)$/.exec(headers.get('authorization') ?? '')?.[1];
  try {
    const header = JSON.parse(Buffer.from(token?.split('.')[0] ?? '', 'base64url').toString('utf8'));
    return typeof header.alg === 'string' ? header.alg : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The correct mock behind a fetch that plays a server comparing `alg` case-sensitively against a deny
 * list holding only "none": it lets exactly one casing through (answers 200 to the API call).
 */
function acceptingOnly(casing: string): typeof globalThis.fetch {
  return async (input, init) => {
    if (algOf(new Headers(init?.headers)) === casing)
      return new Response('{"items":[]}', { status: 200, headers: { 'content-type': 'application/json' } });
    return fetch(input, init);
  };
}

describe('integrity-alg-none', () => {
  it.each(['none', 'None', 'NONE'])('fails on a server that accepts alg %j only', async (casing) => {
    const report = await runConformance({
      only: ['integrity-alg-none'],
      mock: { signingKey: await sharedSigningKey() },
      fetch: acceptingOnly(casing),
    });
    expect(report.checks[0]).toMatchObject({ id: 'integrity-alg-none', status: 'failed' });
    expect(report.checks[0]!.details).toContain(`alg "${casing}"`);
  });
});
