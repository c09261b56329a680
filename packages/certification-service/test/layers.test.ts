import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { importedFiles, sourceFiles } from '../../../test-support/layers.js';

// Imports point one way, down this list (src/README.md is the map): the entry points (cli.ts, index.ts) ←
// server.ts ← ui/, oidc/ ← http/, retention/ ← production/ (the production wing: decisions, approvability,
// the decide rule, the register, its pages, webhook delivery) ← runs/ ← recording/ (the journal, its file,
// the drain, replay, a stage's ledger) ← plan/, judging/, keys.ts, admin.ts ← outbox/ (the outbox and the
// events it holds: runs/ and production/ both enqueue) ← db/, observability/
// ← web/ (problem answers, the pages' frame); errors.ts, secrets.ts and version.ts serve every layer.
// Biome's noImportCycles catches cycles between files; this catches an import that reaches up, and a
// cycle between folders.
const src = fileURLToPath(new URL('../src/', import.meta.url));

const rank = (file: string): number => {
  if (['errors.ts', 'secrets.ts', 'version.ts'].includes(file)) return 0;
  if (file.startsWith('web/')) return 0.5;
  if (file.startsWith('db/') || file.startsWith('observability/')) return 1;
  if (file.startsWith('outbox/')) return 1.5;
  if (file === 'keys.ts' || file === 'admin.ts') return 2;
  if (file.startsWith('plan/') || file.startsWith('judging/')) return 2;
  if (file.startsWith('recording/')) return 2.5;
  if (file.startsWith('runs/')) return 3;
  if (file.startsWith('production/')) return 3.5;
  if (file.startsWith('http/') || file.startsWith('retention/')) return 4;
  if (file.startsWith('ui/') || file.startsWith('oidc/')) return 5;
  if (file === 'server.ts') return 6;
  if (file === 'cli.ts' || file === 'index.ts') return 7;
  throw new Error(`src/${file} has no layer: add it to test/layers.test.ts and to src/README.md`);
};

/** The folder (or root file) a file of src/ belongs to: `production/decisions/signed.ts` → `production`. */
const part = (file: string): string => file.split('/')[0]!;

/**
 * The pairs of parts of src/ (top folders, root files) that import each other, directly or through
 * others, given each file's imports (paths relative to src/).
 */
export function partCycles(imports: ReadonlyMap<string, readonly string[]>): string[] {
  const edges = new Map<string, Set<string>>();
  for (const [file, targets] of imports)
    for (const target of targets)
      if (part(target) !== part(file))
        edges.set(part(file), (edges.get(part(file)) ?? new Set()).add(part(target)));
  const reaches = (from: string, to: string): boolean => {
    const seen = new Set<string>();
    const stack = [from];
    while (stack.length > 0) {
      const at = stack.pop()!;
      for (const next of edges.get(at) ?? []) {
        if (next === to) return true;
        if (seen.has(next)) continue;
        seen.add(next);
        stack.push(next);
      }
    }
    return false;
  };
  const parts = [...edges.keys()].sort();
  return parts.flatMap((a, i) =>
    parts
      .slice(i + 1)
      .filter((b) => reaches(a, b) && reaches(b, a))
      .map((b) => `${a} ↔ ${b}`),
  );
}

/** The imports of `file` (its text given) that point to a higher layer than its own. */
export function upward(file: string, text: string): string[] {
  const own = relative(src, file);
  return importedFiles(file, text)
    .map((target) => relative(src, target))
    .filter((target) => rank(target) > rank(own) || (rank(target) === 7 && own !== target));
}

describe('imports point one way', () => {
  it('no file of src/ imports a higher layer', () => {
    const files = sourceFiles(src);
    expect(files.length).toBeGreaterThan(10);
    expect(
      files.flatMap((file) =>
        upward(file, readFileSync(file, 'utf8')).map((target) => `${relative(src, file)} → ${target}`),
      ),
    ).toEqual([]);
  });

  it('no folder imports back a folder that imports it (but the two cycles issue 50 removes next)', () => {
    const imports = new Map(
      sourceFiles(src).map((file) => [
        relative(src, file),
        importedFiles(file, readFileSync(file, 'utf8')).map((target) => relative(src, target)),
      ]),
    );
    // Left for issue 50, item 3: ui/ ↔ oidc/ (type imports one way, values back) and the metrics' SQL.
    expect(partCycles(imports)).toEqual(['db ↔ observability', 'oidc ↔ ui']);
  });

  it('would catch an import that reaches up (negative control)', () => {
    expect(upward(join(src, 'runs/runs.ts'), "import { x } from '../http/api.js';")).toEqual(['http/api.ts']);
    expect(upward(join(src, 'db/database.ts'), "import { x } from '../keys.js';")).toEqual(['keys.ts']);
    expect(upward(join(src, 'http/api.ts'), "import { x } from '../runs/runs.js';")).toEqual([]);
    expect(upward(join(src, 'recording/ledger.ts'), "import { x } from '../runs/types.js';")).toEqual([
      'runs/types.ts',
    ]);
    expect(upward(join(src, 'production/pages.ts'), "import { x } from '../ui/routes.js';")).toEqual([
      'ui/routes.ts',
    ]);
    expect(upward(join(src, 'outbox/outbox.ts'), "import { x } from '../production/index.js';")).toEqual([
      'production/index.ts',
    ]);
    expect(
      partCycles(
        new Map([
          ['ui/routes.ts', ['production/index.ts']],
          ['production/pages.ts', ['ui/html.ts']],
        ]),
      ),
    ).toEqual(['production ↔ ui']);
  });
});
