import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { EvidenceRecord } from '../src/evidence-record.js';
import { EvidenceSpool } from '../src/evidence-spool.js';

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});
const fileIn = () => {
  const directory = mkdtempSync(join(tmpdir(), 'partner-mock-spool-'));
  directories.push(directory);
  return join(directory, 'evidence.spool');
};
const record = (status: number): EvidenceRecord => ({
  at: 1,
  partnerId: 'p',
  method: 'GET',
  path: '/x',
  status,
});

describe('evidence-spool', () => {
  it('gives back at the next open what was not acknowledged, in order; acknowledged batches are gone', async () => {
    const file = fileIn();
    const { spool, batches } = await EvidenceSpool.open(file, 1 << 20);
    expect(batches).toEqual([]);
    for (const id of ['a', 'b', 'c'])
      expect(await spool.append({ id, dropped: 0, records: [record(200)] })).toBe(true);
    await spool.ack('b');
    await spool.close();
    const reopened = await EvidenceSpool.open(file, 1 << 20);
    expect(reopened.batches.map((batch) => batch.id)).toEqual(['a', 'c']);
    expect(reopened.damaged).toBe(0);
    // Rewritten at open with the unacknowledged batches alone.
    expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(2);
    await reopened.spool.ack('a');
    await reopened.spool.ack('c');
    // Nothing left: the file is emptied.
    expect(readFileSync(file, 'utf8')).toBe('');
    await reopened.spool.close();
  });

  it('skips damaged lines and counts them', async () => {
    const file = fileIn();
    writeFileSync(
      file,
      `${JSON.stringify({ id: 'ok', dropped: 2, records: [record(401)] })}\nnot json\n{"id":"x","dropped":0,"records":[{"at":"no"}]}\n{"id":"torn`,
    );
    const { spool, batches, damaged } = await EvidenceSpool.open(file, 1 << 20);
    expect(batches).toEqual([{ id: 'ok', dropped: 2, records: [record(401)] }]);
    expect(damaged).toBe(3);
    await spool.close();
  });

  it('refuses a batch that does not fit even after compaction; takes it once room is made', async () => {
    const file = fileIn();
    const { spool } = await EvidenceSpool.open(file, 4096);
    const big = Array.from({ length: 30 }, () => record(200));
    let taken = 0;
    for (let i = 0; i < 10; i += 1)
      if (await spool.append({ id: `b${i}`, dropped: 0, records: big })) taken += 1;
    expect(taken).toBeGreaterThan(0);
    expect(taken).toBeLessThan(10);
    expect(spool.bytes).toBeLessThanOrEqual(4096);
    for (let i = 0; i < taken; i += 1) await spool.ack(`b${i}`);
    expect(await spool.append({ id: 'later', dropped: 0, records: big })).toBe(true);
    await spool.close();
  });
});
