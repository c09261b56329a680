import { sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { unmapped } from '../../../test-support/layers.js';

const src = fileURLToPath(new URL('../src/', import.meta.url));

describe("src/README.md, the suite's map", () => {
  it('names every file of src/ (the checks, one file per id, are held by catalogue-layout.test.ts)', () => {
    expect(unmapped(src, (file) => file.includes(`checks${sep}`))).toEqual([]);
  });
});
