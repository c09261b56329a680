import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { importedFiles, sourceFiles } from '../../../test-support/layers.js';

// Imports point one way, down this list (src/README.md is the map), one part of src/ (a top folder or a
// root file) to a rank: the entry points (cli.ts ← cli/, the command; index.ts) ← server.ts ← ui/ ← oidc/ ← signin/ (the
// sign-in guard both use) ← http/ ← retention/ ← evidence/ (production evidence: its route, store, hand-out to judging) ← production/ (the production wing: decisions,
// approvability, the decide rule, the register, its pages, webhook delivery and its gauges) ← runs/ (its
// gauges too) ← recording/ (the journal, its file, the drain, replay, a stage's ledger) ← judging/ ← plan/
// ← admin.ts ← keys.ts ← outbox/ (the outbox and the events it holds: runs/ and production/ both enqueue)
// ← principals.ts (a principal's row and audit line) ← audit.ts (the audit log's one writer) ← db/ ← observability/ ← web/ (problem answers, the pages' frame) ← secrets.ts ← version.ts ← errors.ts.
// Biome's noImportCycles catches cycles between files; this catches an import that reaches up, a cycle
// between folders, and two parts given one rank (a tie lets them import each other both ways).
const src = fileURLToPath(new URL('../src/', import.meta.url));

/** The parts of src/, lowest first: each part's rank is its place here. */
const layers = [
  'errors.ts',
  'version.ts',
  'secrets.ts',
  'web',
  'observability',
  'db',
  'audit.ts',
  'principals.ts',
  'outbox',
  'keys.ts',
  'admin.ts',
  'plan',
  'judging',
  'recording',
  'runs',
  'production',
  'evidence',
  'regressions',
  'retention',
  'http',
  'signin',
  'oidc',
  'ui',
  'server.ts',
  'index.ts',
  'cli',
  'cli.ts',
];

const rank = (file: string): number => {
  const at = layers.indexOf(part(file));
  if (at < 0) throw new Error(`src/${file} has no layer: add it to test/layers.test.ts and to src/README.md`);
  return at;
};

/** The entry points: nothing imports them. */
const entryPoints = ['cli.ts', 'index.ts'];

/**
 * The ranks that two parts or more share, as `rank: a, b`, given the parts (with their rank as
 * `rankOf` says); [] when each part has a rank of its own.
 */
export function rankTies(parts: readonly string[], rankOf: (part: string) => number): string[] {
  const byRank = new Map<number, string[]>();
  for (const name of new Set(parts)) byRank.set(rankOf(name), [...(byRank.get(rankOf(name)) ?? []), name]);
  return [...byRank]
    .filter(([, names]) => names.length > 1)
    .map(([at, names]) => `${at}: ${names.sort().join(', ')}`);
}

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
    .filter((target) => rank(target) > rank(own) || (entryPoints.includes(target) && own !== target));
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

  it('no folder imports back a folder that imports it', () => {
    const imports = new Map(
      sourceFiles(src).map((file) => [
        relative(src, file),
        importedFiles(file, readFileSync(file, 'utf8')).map((target) => relative(src, target)),
      ]),
    );
    expect(partCycles(imports)).toEqual([]);
  });

  it('each part of src/ has a rank of its own, and every rank a part', () => {
    const parts = [...new Set(sourceFiles(src).map((file) => part(relative(src, file))))];
    expect(rankTies(parts, (name) => layers.indexOf(name))).toEqual([]);
    expect(layers.filter((name) => !parts.includes(name))).toEqual([]);
    for (const name of parts) expect(layers, `src/${name} has no layer`).toContain(name);
  });

  it('would catch a rank tie (negative control)', () => {
    const tied = (name: string) => (name === 'oidc' ? layers.indexOf('ui') : layers.indexOf(name));
    expect(rankTies(['ui', 'oidc', 'http'], tied)).toEqual([`${layers.indexOf('ui')}: oidc, ui`]);
    expect(rankTies(['ui', 'oidc', 'http'], (name) => layers.indexOf(name))).toEqual([]);
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
    expect(upward(join(src, 'oidc/oidc.ts'), "import type { x } from '../ui/routes.js';")).toEqual([
      'ui/routes.ts',
    ]);
    expect(
      upward(join(src, 'observability/metrics.ts'), "import type { x } from '../db/database.js';"),
    ).toEqual(['db/database.ts']);
    expect(upward(join(src, 'runs/runs.ts'), "import { x } from '../index.js';")).toEqual(['index.ts']);
    expect(
      partCycles(
        new Map([
          ['ui/routes.ts', ['production/index.ts']],
          ['production/pages.ts', ['ui/html.ts']],
        ]),
      ),
    ).toEqual(['production ↔ ui']);
    expect(
      partCycles(
        new Map([
          ['db/batched.ts', ['observability/metrics.ts']],
          ['observability/metrics.ts', ['runs/metrics.ts']],
          ['runs/metrics.ts', ['db/database.ts']],
        ]),
      ),
    ).toEqual(['db ↔ observability', 'db ↔ runs', 'observability ↔ runs']);
  });
});
