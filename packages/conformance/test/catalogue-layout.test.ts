import { readdirSync } from 'node:fs';
import { basename, dirname, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { clientChecks } from '../src/client/checks/index.js';
import { checks } from '../src/server/checks/index.js';

const src = fileURLToPath(new URL('../src/', import.meta.url));

/** Every check module: src/<mode>/checks/<category>/<id>.ts (helpers/ holds the shared code, not checks). */
function checkFiles(mode: 'server' | 'client'): string[] {
  const root = `${src}${mode}/checks/`;
  return readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && entry.name !== 'helpers')
    .flatMap((dir) =>
      readdirSync(`${root}${dir.name}`)
        .filter((name) => name.endsWith('.ts'))
        .map((name) => `${root}${dir.name}/${name}`),
    );
}

describe('the catalogue is laid out as it reads', () => {
  for (const [mode, catalogue] of [
    ['server', checks],
    ['client', clientChecks],
  ] as const) {
    it(`${mode} mode: each check's file is named by its id, in the folder of its category`, async () => {
      const files = checkFiles(mode);
      const found: string[] = [];
      for (const file of files) {
        const module = (await import(pathToFileURL(file).href)) as {
          default?: { id: string; category: string };
        };
        const where = relative(src, file);
        expect(module.default, `${where} exports no check (shared code goes in helpers/)`).toBeDefined();
        expect(module.default!.id, `${where}: the file name is the check id`).toBe(basename(file, '.ts'));
        expect(module.default!.category, `${where}: the folder is the category`).toBe(
          basename(dirname(file)),
        );
        found.push(module.default!.id);
      }
      expect(found.sort()).toEqual(catalogue.map((check) => check.id).sort());
    });
  }
});
