import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Imports point one way: index.ts exports, redis-token-store.ts composes the parts, and no part imports either of
// them (Biome's noImportCycles catches cycles; this catches a part reaching up).
const src = fileURLToPath(new URL('../src/', import.meta.url));
const top = ['index.ts', 'redis-token-store.ts'];

const sources = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sources(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );

/** The imports of `file` (its text given) that reach up to index.ts or redis-token-store.ts. */
export function upward(file: string, text: string): string[] {
  if (top.includes(relative(src, file))) return [];
  return [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)]
    .map((match) => relative(src, resolve(dirname(file), match[1]!)).replace(/\.js$/, '.ts'))
    .filter((target) => top.includes(target));
}

describe('imports point one way', () => {
  it('no part of src/ imports index.ts or redis-token-store.ts', () => {
    const files = sources(src);
    expect(files.length).toBeGreaterThan(3);
    expect(
      files.flatMap((file) =>
        upward(file, readFileSync(file, 'utf8')).map((target) => `${relative(src, file)} → ${target}`),
      ),
    ).toEqual([]);
  });

  it('would catch a part that reaches up (negative control)', () => {
    expect(upward(join(src, 'part.ts'), "import { x } from './redis-token-store.js';")).toEqual([
      'redis-token-store.ts',
    ]);
    expect(upward(join(src, top[1]!), "import { x } from './index.js';")).toEqual([]);
    expect(basename(src)).toBe('src');
  });
});
