import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { unmapped } from '../../../test-support/layers.js';

const src = fileURLToPath(new URL('../src/', import.meta.url));

describe("src/README.md, the service's map", () => {
  it('names every file of src/', () => {
    expect(unmapped(src)).toEqual([]);
  });

  it('would name a file it misses (negative control)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'map-'));
    try {
      writeFileSync(join(dir, 'README.md'), 'a.ts only\n');
      for (const file of ['a.ts', 'b.ts']) writeFileSync(join(dir, file), '');
      expect(unmapped(dir)).toEqual(['b.ts']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
