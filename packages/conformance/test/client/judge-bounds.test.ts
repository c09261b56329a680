import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatSession, judgeSession, readSessionFile } from '../../src/index.js';
import { loans, sessionOf, tokenRequest } from './support/session.js';

describe('judging is bounded by the session, not by how its requests overlap', () => {
  it('10,000 token requests in flight at once: every check judges, in O(n) memory (well under 1 GB)', () => {
    const count = 10_000;
    const exchanges = [
      ...Array.from({ length: count }, (_, index) => ({
        ...tokenRequest(13_000 + index / 100, `T${index + 1}`),
        end: 20_000,
      })),
      ...Array.from({ length: count }, (_, index) => loans(20_000 + index, `T${index + 1}`)),
    ];
    const tokens = Array.from({ length: count }, (_, index) => ({
      ref: `T${index + 1}`,
      issuedAt: 20_000,
      expAt: 3_620_000,
    }));
    const session = sessionOf(exchanges, tokens);
    const before = process.memoryUsage().heapUsed;
    const report = judgeSession(session);
    const grown = process.memoryUsage().heapUsed - before;
    expect(grown).toBeLessThan(1024 * 1024 * 1024);
    const singleFlight = report.checks.find((check) => check.id === 'client-single-flight')!;
    expect(singleFlight.status).toBe('failed');
    // The pairs are counted, not kept: the details list a few and the number.
    expect(singleFlight.details).toMatch(/^9999 pairs of token requests/);
    expect(singleFlight.details.split('\n').length).toBeLessThan(30);
    expect(report.checks.every((check) => check.status !== 'errored')).toBe(true);
  });

  it("a session file at the recorder's cap is read, validated and judged in bounded memory", async () => {
    const count = 50_000;
    const tokens = Array.from({ length: count / 25 }, (_, index) => ({
      ref: `T${index + 1}`,
      issuedAt: index * 25 + 5,
      expAt: index * 25 + 3_600_005,
    }));
    const exchanges = Array.from({ length: count }, (_, index) =>
      index % 25 === 0
        ? tokenRequest(index, `T${index / 25 + 1}`)
        : loans(index, `T${Math.floor(index / 25) + 1}`, 200, { responseBody: 'x'.repeat(300) }),
    );
    const dir = await mkdtemp(join(tmpdir(), 'bounded-session-'));
    const file = join(dir, 'session.json');
    await writeFile(file, formatSession(sessionOf(exchanges, tokens)));
    const before = process.memoryUsage().rss;
    const read = await readSessionFile(file);
    const report = judgeSession(read.session);
    const grown = process.memoryUsage().rss - before;
    await rm(dir, { recursive: true });
    expect(read.session.exchanges).toHaveLength(count);
    expect(report.checks.every((check) => check.status !== 'errored')).toBe(true);
    expect(grown, `RSS grew by ${Math.round(grown / 1048576)} MiB`).toBeLessThan(1024 * 1024 * 1024);
  }, 60_000);
});
