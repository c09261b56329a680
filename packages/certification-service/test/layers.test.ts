import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { importedFiles, sourceFiles } from '../../../test-support/layers.js';

// Imports point one way, down this list: the entry points (cli.ts, index.ts) ← server.ts ← ui/, oidc/, register/ ← http/,
// retention/ ← runs/ ← coverage/ ← plan/, decisions/, judging/, keys.ts, admin.ts ← webhooks/ ← db/, observability/;
// errors.ts, secrets.ts and version.ts serve every layer. Biome's
// noImportCycles catches cycles; this catches an import that reaches up.
const src = fileURLToPath(new URL('../src/', import.meta.url));

const rank = (file: string): number => {
  if (['errors.ts', 'secrets.ts', 'version.ts'].includes(file)) return 0;
  if (file.startsWith('db/') || file.startsWith('observability/')) return 1;
  if (file === 'keys.ts' || file === 'admin.ts') return 2;
  if (file.startsWith('webhooks/')) return 1.5;
  if (file.startsWith('plan/') || file.startsWith('decisions/') || file.startsWith('judging/')) return 2;
  if (file.startsWith('coverage/')) return 2.5;
  if (file.startsWith('runs/')) return 3;
  if (file.startsWith('http/') || file.startsWith('retention/')) return 4;
  if (file.startsWith('ui/') || file.startsWith('oidc/') || file.startsWith('register/')) return 5;
  if (file === 'server.ts') return 6;
  if (file === 'cli.ts' || file === 'index.ts') return 7;
  throw new Error(`src/${file} has no layer: add it to test/layers.test.ts and src's map in the README`);
};

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

  it('would catch an import that reaches up (negative control)', () => {
    expect(upward(join(src, 'runs/runs.ts'), "import { x } from '../http/api.js';")).toEqual(['http/api.ts']);
    expect(upward(join(src, 'db/database.ts'), "import { x } from '../keys.js';")).toEqual(['keys.ts']);
    expect(upward(join(src, 'http/api.ts'), "import { x } from '../runs/runs.js';")).toEqual([]);
  });
});
