import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/** Every `.ts` file under `dir`, at any depth. */
export function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );
}

/** The files `file` (its text given) imports by relative path (static, type-only, dynamic), as `.ts` paths. */
export function importedFiles(file: string, text: string): string[] {
  return [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map((match) =>
    resolve(dirname(file), match[1]!).replace(/\.js$/, '.ts'),
  );
}

/**
 * The layering test of a package whose `tops` (index.ts, then the module that composes the parts) sit
 * over every other file of `src`: no part imports one of them. Biome's noImportCycles catches cycles;
 * this catches a part reaching up.
 */
export function partsNeverImport(src: string, tops: readonly string[]): void {
  /** The imports of `file` (its text given) that reach up to one of the tops. */
  const upward = (file: string, text: string): string[] =>
    tops.includes(relative(src, file))
      ? []
      : importedFiles(file, text)
          .map((target) => relative(src, target))
          .filter((target) => tops.includes(target));

  describe('imports point one way', () => {
    it(`no part of src/ imports ${tops.join(' or ')}`, () => {
      const files = sourceFiles(src);
      expect(files.length).toBeGreaterThan(3);
      expect(
        files.flatMap((file) =>
          upward(file, readFileSync(file, 'utf8')).map((target) => `${relative(src, file)} → ${target}`),
        ),
      ).toEqual([]);
    });

    it('would catch a part that reaches up (negative control)', () => {
      for (const top of tops)
        expect(upward(join(src, 'part.ts'), `import { x } from './${top.replace(/\.ts$/, '.js')}';`)).toEqual(
          [top],
        );
      expect(upward(join(src, tops.at(-1)!), "import { x } from './index.js';")).toEqual([]);
      expect(basename(src)).toBe('src');
    });
  });
}

/**
 * The files of `src` (relative paths) that its map, `src/README.md`, does not name by file name —
 * `except` leaves out what another test holds (a catalogue's one-file-per-check folders, say).
 */
export function unmapped(src: string, except: (file: string) => boolean = () => false): string[] {
  const map = readFileSync(join(src, 'README.md'), 'utf8');
  return sourceFiles(src)
    .map((file) => relative(src, file))
    .filter((file) => !except(file) && !map.includes(basename(file)));
}
