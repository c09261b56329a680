import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtemp, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { maxSessionBytes } from '../../src/client/session-schema.js';
import { loans, sessionOf, tokenRequest } from '../client/support/session.js';

const bin = fileURLToPath(new URL('../../bin/partner-conformance.js', import.meta.url));
const judge = (file: string, ...extra: string[]) => {
  const started = performance.now();
  const run = spawnSync(process.execPath, [bin, 'client', '--judge', file, ...extra], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { ...run, ms: performance.now() - started };
};
const valid = () =>
  sessionOf([tokenRequest(0, 'T1'), loans(10, 'T1')], [{ ref: 'T1', issuedAt: 5, expAt: 4000 }]);

describe('a session file is hostile input to the reviewer', () => {
  it('a FIFO is refused at once (exit 2), without waiting for a writer', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hostile-'));
    const fifo = join(dir, 'session.json');
    execFileSync('mkfifo', [fifo]);
    const run = judge(fifo);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('is not a regular file (a FIFO)');
    expect(run.ms).toBeLessThan(30_000);
  });

  it('a file over the size limit is refused before it is read (exit 2)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hostile-'));
    const big = join(dir, 'session.json');
    await writeFile(big, '');
    await truncate(big, maxSessionBytes + 1);
    const run = judge(big);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(`over the ${maxSessionBytes}-byte limit`);
  });

  it('a 100,000-deep nesting, a number field holding markup, an unknown field: refused by the schema (exit 2), no crash', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hostile-'));
    // Written as text: the nesting is too deep for JSON.stringify itself.
    const deepText = JSON.stringify({
      ...valid(),
      journey: { ...valid().journey, command: ['DEEP'] },
    }).replace('["DEEP"]', `[${'['.repeat(100_000)}${']'.repeat(100_000)}]`);
    const cases: Array<[string, unknown, RegExp]> = [
      ['deep', deepText, /journey\.command\[0\]/],
      [
        'markup in a number',
        { ...valid(), stage: { ...valid().stage, ttlSeconds: '<script>alert(1)</script>' } },
        /stage\.ttlSeconds/,
      ],
      ['unknown field', { ...valid(), extra: { payload: 1 } }, /session schema/],
      [
        'seq as markup',
        { ...valid(), scenarios: [{ name: 'throttle', enabled: true, plan: 'p', seq: '<img src=x>' }] },
        /scenarios\[0\]\.seq/,
      ],
    ];
    for (const [name, session, where] of cases) {
      const file = join(dir, `${name}.json`);
      await writeFile(file, typeof session === 'string' ? session : JSON.stringify(session));
      const run = judge(file);
      expect(run.status, `${name}: ${run.stderr}`).toBe(2);
      expect(run.stderr, name).toMatch(where);
      expect(run.stderr, name).not.toContain('Maximum call stack');
    }
  });

  it('escape sequences in a session never reach the terminal (cursor moves, line erase, OSC 52 clipboard)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hostile-'));
    const session = valid();
    const attack = '\u001b[2J\u001b[1;1H\u001b]52;c;ZXZpbA==\u0007\u009b31m\r\u202e';
    session.journey.command = [`journey${attack}`];
    session.exchanges[1]!.target = `/v3/partner/p1/loans?x=${attack}`;
    const file = join(dir, 'session.json');
    await writeFile(file, JSON.stringify(session));
    const run = judge(file);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('journey\\x1b[2J');
    // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
    expect(run.stdout + run.stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202e]/);
  });
});
