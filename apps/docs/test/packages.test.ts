import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { docsRoot } from './helpers/build-site.js';

// What npm shows of each published package: where it comes from, where its docs and issues are, how
// it is published (public, with provenance), and a real version, the same repository everywhere.
const repo = join(docsRoot, '..', '..');
const manifests = execFileSync('git', ['ls-files', '*package.json'], { cwd: repo, encoding: 'utf8' })
  .split('\n')
  .filter((file) => file !== '' && file !== 'package.json' && !file.includes('/test/'))
  .map((file) => ({ file, json: JSON.parse(readFileSync(join(repo, file), 'utf8')) }))
  .filter(({ json }) => json.private !== true);

describe('published packages', () => {
  it('are the seven @partner-lending packages', () => {
    expect(manifests.map(({ json }) => json.name).sort()).toEqual([
      '@partner-lending/auth',
      '@partner-lending/certification-service',
      '@partner-lending/conformance',
      '@partner-lending/mock',
      '@partner-lending/sdk',
      '@partner-lending/spec',
      '@partner-lending/token-store-redis',
    ]);
  });

  it.each(manifests.map(({ file, json }) => [json.name, file, json]))(
    '%s has the metadata npm shows',
    (_name, file, json) => {
      const directory = file.replace(/\/package\.json$/, '');
      expect(json.version).toMatch(/^\d+\.\d+\.\d+/);
      expect(json.version).not.toBe('0.0.0');
      expect(json.license).toBe('MIT');
      expect(json.keywords.length).toBeGreaterThan(2);
      expect(json.repository).toEqual({
        type: 'git',
        url: 'git+https://github.com/partner-lending/partner-lending-toolkit.git',
        directory,
      });
      expect(json.homepage).toBe(
        `https://github.com/partner-lending/partner-lending-toolkit/tree/main/${directory}#readme`,
      );
      expect(json.bugs).toEqual({ url: 'https://github.com/partner-lending/partner-lending-toolkit/issues' });
      expect(json.publishConfig).toEqual({ access: 'public', provenance: true });
      expect(json.engines.node).toBe('>=20.19');
    },
  );
});
