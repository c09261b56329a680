import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openJournalFile, parseJournalFile, readJournalFile } from '../src/recording/journal-file.js';

// The journal file's segments: the next one is opened ahead, off the thread that answers calls, and
// the committed ones are deleted off it too; what was written is read back in order whatever happened.
const entry = (seq: number) => ({ runId: 'r1', seq, exchange: JSON.stringify({ seq }) });
const files = (dir: string) => readdirSync(dir).sort();
const openFds = () => readdirSync('/proc/self/fd').length;
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));
/** The call numbers the segments in `dir` hold, in the order a restart reads them. */
const seqs = (dir: string) => readJournalFile(dir).entries.map((item) => ('seq' in item ? item.seq : 0));

describe('journal file segments', () => {
  it('opens the next segment before it is needed, and deletes only what came before a rotation', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcs-journal-file-'));
    const file = openJournalFile(dir);
    await settle();
    // The segment in use and the one opened ahead: a rotation creates no file itself.
    expect(files(dir)).toEqual(['exchanges-000000000001.ndjson', 'exchanges-000000000002.ndjson']);
    file.append([entry(1), entry(2)]);
    const release = file.rotate();
    file.append([entry(3)]);
    expect(readFileSync(join(dir, 'exchanges-000000000002.ndjson'), 'utf8')).toContain('{"seq":3}');
    expect(seqs(dir)).toEqual([1, 2, 3]);
    await release();
    await settle();
    expect(files(dir)).toEqual(['exchanges-000000000002.ndjson', 'exchanges-000000000003.ndjson']);
    expect(parseJournalFile(readFileSync(join(dir, 'exchanges-000000000002.ndjson'), 'utf8'))).toHaveLength(
      1,
    );
    await file.close(true);
    expect(files(dir)).toEqual([]);
  });

  it('rotates at once when the segment ahead is not open yet, losing nothing and leaking no descriptor', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcs-journal-file-'));
    const before = openFds();
    const file = openJournalFile(dir);
    const releases = [];
    // Rotations in a row, each before the pool has opened the segment ahead: each opens its own.
    for (let seq = 1; seq <= 5; seq += 1) {
      file.append([entry(seq)]);
      releases.push(file.rotate());
    }
    file.append([entry(6)]);
    expect(seqs(dir)).toEqual([1, 2, 3, 4, 5, 6]);
    await settle();
    for (const release of releases) await release();
    expect(seqs(dir)).toEqual([6]);
    // Kept: the segment holding what is not committed, and it again after the process ends.
    await file.close(false);
    await settle();
    expect(openFds()).toBe(before);
    expect(seqs(dir)).toEqual([6]);
    const again = openJournalFile(dir);
    again.append([entry(7)]);
    expect(seqs(dir)).toEqual([6, 7]);
    await again.close(false);
  });

  it('closed right after a rotation, before the pool answers, leaves no file when nothing is left to commit', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcs-journal-file-'));
    const file = openJournalFile(dir);
    file.append([entry(1)]);
    file.rotate();
    await file.close(true);
    await settle();
    expect(files(dir)).toEqual([]);
  });
});
