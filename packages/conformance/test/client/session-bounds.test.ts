import { spawnSync } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { clampText, fitSession } from '../../src/client/session-bounds.js';
import { formatSession, parseSession, startStage } from '../../src/index.js';
import { clientCredentialsRequest } from '../helpers.js';
import { loans, sessionOf, tokenRequest } from './support/session.js';

// The recorder keeps every value within the bounds the session reader enforces, so that a genuine
// session always judges again: a partner cannot make its own session (and its attestation) unreadable.

const bin = fileURLToPath(new URL('../../bin/partner-conformance.js', import.meta.url));
const valid = () =>
  sessionOf([tokenRequest(0, 'T1'), loans(10, 'T1')], [{ ref: 'T1', issuedAt: 5, expAt: 4000 }]);

describe('fitSession: every bound of the session schema, applied when the session is assembled', () => {
  it('a session within the bounds is left exactly as it was (negative control: nothing is marked)', () => {
    const session = valid();
    expect(fitSession(structuredClone(session))).toEqual(session);
  });

  it('over-long fields the reader refuses come back within bounds, marked with their length, and counted', () => {
    const session = valid();
    const request = session.exchanges[0]!;
    request.form = {
      ...request.form!,
      grantType: 'g'.repeat(318),
      scope: 's'.repeat(5000),
      audience: 'a'.repeat(1500),
      resource: Array.from({ length: 40 }, (_, index) => `https://r${index}.example/${'x'.repeat(1200)}`),
      repeated: Array.from({ length: 40 }, (_, index) => `p${index}${'y'.repeat(150)}`),
    };
    request.method = 'M'.repeat(30);
    request.requestHeaders = Object.fromEntries(
      Array.from({ length: 20 }, (_, index) => [`h${index}`, 'v'.repeat(1200)]),
    );
    session.integration = { name: 'n'.repeat(500) };
    // Negative control: as recorded, the reader refuses it ("damaged or edited").
    expect(() => parseSession(formatSession(session))).toThrow(/damaged or was edited/);
    const fitted = fitSession(session);
    expect(() => parseSession(formatSession(fitted))).not.toThrow();
    const form = fitted.exchanges[0]!.form!;
    expect(form.grantType).toHaveLength(200);
    expect(form.grantType).toMatch(/^g+…\[318 chars\]$/);
    expect(form.scope).toMatch(/…\[5000 chars\]$/);
    expect(form.resource).toHaveLength(16);
    expect(form.resource.at(-1)).toBe('…[40 items]');
    expect(form.resource[0]).toMatch(/…\[\d+ chars\]$/);
    expect(form.repeated).toHaveLength(32);
    expect(Object.keys(fitted.exchanges[0]!.requestHeaders)).toHaveLength(16);
    expect(fitted.integration!.name).toMatch(/…\[500 chars\]$/);
    // grantType, scope, audience, the resource list and 16 of its items, the repeated list and 31 of
    // its names, the method, the header list and 16 of its values, the integration's name.
    expect(fitted.clamped).toBe(1 + 1 + 1 + 1 + 15 + 1 + 31 + 1 + 1 + 16 + 1);
  });

  it('past the file bound, the last exchanges and the tokens they issued are counted in dropped, not kept', () => {
    const exchanges = Array.from({ length: 300 }, (_, index) =>
      index % 10 === 0
        ? tokenRequest(index * 10, `T${index / 10 + 1}`)
        : loans(index * 10, `T${Math.floor(index / 10) + 1}`, 200, { responseBody: 'r'.repeat(2000) }),
    );
    const tokens = Array.from({ length: 30 }, (_, index) => ({
      ref: `T${index + 1}`,
      seq: index * 10 + 1,
      issuedAt: index * 100 + 5,
      expAt: index * 100 + 4000,
    }));
    const session = sessionOf(exchanges, tokens);
    // Negative control: under the reader's 100 MiB the same session is kept whole.
    expect(fitSession(structuredClone(session)).exchanges).toHaveLength(300);
    const maxBytes = 200_000;
    expect(Buffer.byteLength(formatSession(session))).toBeGreaterThan(maxBytes);
    const fitted = fitSession(session, maxBytes);
    expect(Buffer.byteLength(formatSession(fitted))).toBeLessThanOrEqual(maxBytes);
    expect(fitted.exchanges.length).toBeGreaterThan(30);
    expect(fitted.dropped).toBe(300 - fitted.exchanges.length);
    const kept = new Set(fitted.exchanges.map((exchange) => exchange.seq));
    expect(fitted.tokens.every((token) => kept.has(token.seq))).toBe(true);
    expect(fitted.tokens.length).toBeLessThan(30);
    expect(() => parseSession(formatSession(fitted))).not.toThrow();
  });

  it('clampText keeps short text whole and marks what it cuts', () => {
    expect(clampText('abc', 3)).toBe('abc');
    expect(clampText('abcdefghijklmnopqrstuvwxyz', 20)).toBe('abcdefghi…[26 chars]');
    expect(clampText('abcdefghijklmnopqrstuvwxyz', 5)).toBe('abcde');
  });
});

describe('the stage saves a session that --judge reads back, whatever the client sent', () => {
  it('a 318-character grant_type (and over-long scope, audience, resources, repeated fields) re-judges without "damaged or edited"', async () => {
    const stage = await startStage({ tokenDelayMs: 0, apiDelayMs: 0 });
    try {
      const form = new URLSearchParams({
        grant_type: `client_credentials${'x'.repeat(300)}`,
        client_id: stage.client.clientId,
        client_secret: stage.client.clientSecret,
        scope: 'read:loans '.repeat(150),
        audience: stage.audience + '/'.repeat(1200),
      });
      for (let index = 0; index < 40; index++) {
        form.append('resource', `https://r${index}.example/${'x'.repeat(1100)}`);
        form.append(`param${index}${'y'.repeat(120)}`, '1');
        form.append(`param${index}${'y'.repeat(120)}`, '2');
      }
      const response = await fetch(stage.tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: form,
      });
      await response.arrayBuffer();
      // And a proper request, so the session has something a check passes on.
      const good = await clientCredentialsRequest(stage.tokenUrl, stage.client, {
        scope: 'read:loans',
        audience: stage.audience,
      });
      expect(good.status).toBe(200);
    } finally {
      await stage.close();
    }
    const session = stage.session({
      command: ['journey'],
      exitCode: 0,
      signal: null,
      durationMs: 1,
      ending: 'exited',
    });
    const recorded = session.exchanges[0]!.form!;
    expect(recorded.grantType).toMatch(/^client_credentialsx+…\[318 chars\]$/);
    expect(session.clamped).toBeGreaterThan(40);
    const dir = await mkdtemp(join(tmpdir(), 'session-bounds-'));
    const file = join(dir, 'session.json');
    await writeFile(file, formatSession(session));
    const run = spawnSync(process.execPath, [bin, 'client', '--judge', file], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(`${run.stdout}${run.stderr}`).not.toMatch(/damaged or was edited/);
    // Judged: exit 0 or 1 (a verdict), never 2 (a file refused).
    expect([0, 1], run.stderr).toContain(run.status);
    expect(run.stdout).toContain('self-recorded, not attested');
    expect(run.stdout).toMatch(/\d+ recorded values shortened to the session's bounds/);
    // Nothing the client sent twice lands whole: not the secret, not a token.
    expect(formatSession(session)).not.toContain(stage.client.clientSecret);
  }, 60_000);
});
