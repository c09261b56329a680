import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { importedFiles, sourceFiles } from '../../../test-support/layers.js';

const src = fileURLToPath(new URL('../src/', import.meta.url));

/**
 * The layers of src/, lowest first: a file imports only its own layer and those below; server/ and
 * client/ are siblings that never import each other. errors.ts and version.ts serve every layer.
 */
const layerOf = (file: string): { name: string; rank: number } => {
  const top = relative(src, file).split(sep)[0]!;
  if (top === 'errors.ts' || top === 'version.ts') return { name: top, rank: 0 };
  if (top === 'common') return { name: 'common', rank: 1 };
  if (top === 'server' || top === 'client') return { name: top, rank: 2 };
  if (top === 'reporters') return { name: 'reporters', rank: 3 };
  if (top === 'attestation') return { name: 'attestation', rank: 4 };
  if (top === 'cli') return { name: 'cli', rank: 5 };
  if (top === 'index.ts' || top === 'cli.ts') return { name: top, rank: 6 };
  throw new Error(`${top} is in no layer: add it to test/layers.test.ts and src/README.md`);
};

/** What is wrong with the imports of `file` (its text given): upward and cross-mode imports. */
function offencesOf(file: string, text: string): string[] {
  const own = layerOf(file);
  const found: string[] = [];
  for (const target of importedFiles(file, text)) {
    if (!target.startsWith(src)) continue; // ../package.json
    const other = layerOf(target);
    const where = `${relative(src, file)} imports ${relative(src, target)}`;
    if (other.rank > own.rank) found.push(`${where}: up from ${own.name} to ${other.name}`);
    else if (other.rank === own.rank && other.name !== own.name && own.rank === 2)
      found.push(`${where}: across modes (${own.name} → ${other.name}); move what both need to common/`);
  }
  return found;
}

describe('imports point one way', () => {
  it('no file of src/ imports up the layers or across the modes', () => {
    const files = sourceFiles(src);
    expect(files.length).toBeGreaterThan(90);
    expect(files.flatMap((file) => offencesOf(file, readFileSync(file, 'utf8')))).toEqual([]);
  });

  it('the map at the top of src/ names every folder of src/', () => {
    const map = readFileSync(join(src, 'README.md'), 'utf8');
    const folders = readdirSync(src, { withFileTypes: true }).filter((entry) => entry.isDirectory());
    for (const folder of folders) expect(map, folder.name).toContain(`${folder.name}/`);
    // The category folders under checks/ are covered by checks/<category>/ (test/catalogue-layout.test.ts).
    const named = sourceFiles(src)
      .map((file) => relative(src, dirname(file)).split(sep))
      .filter((parts) => parts[0] !== '' && !(parts.at(-2) === 'checks' && parts.at(-1) !== 'helpers'));
    for (const parts of named) expect(map, parts.join('/')).toContain(`${parts.at(-1)}/`);
  });

  it('would catch an upward and a cross-mode import (negative control)', () => {
    // A file that is never written: client/ importing the CLI and the server's catalogue.
    const text =
      "import { main } from '../cli/main.js';\nimport { checks } from '../server/checks/index.js';\n";
    expect(offencesOf(join(src, 'client', 'probe.ts'), text)).toEqual([
      'client/probe.ts imports cli/main.ts: up from client to cli',
      'client/probe.ts imports server/checks/index.ts: across modes (client → server); move what both need to common/',
    ]);
    expect(offencesOf(join(src, 'cli', 'probe.ts'), text)).toEqual([]);
  });
});
