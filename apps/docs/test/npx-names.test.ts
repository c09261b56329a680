import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { docsRoot } from './helpers/build-site.js';

const repo = join(docsRoot, '..', '..');

// `npx partner-conformance` would run whatever package of that name the registry holds — a name no one
// owns, with the partner's client secret in the environment. Every doc and help text runs the commands
// by their scoped packages.
describe('commands are run by their scoped package', () => {
  it('no Markdown file, guide or help text says npx partner-… (unscoped)', () => {
    const files = execFileSync('git', ['ls-files', '*.md', '*.ts', '*.mjs'], { cwd: repo, encoding: 'utf8' })
      .split('\n')
      .filter((file) => file.length > 0 && !file.includes('/test/'));
    expect(files.length).toBeGreaterThan(20);
    const offenders = files.flatMap((file) =>
      readFileSync(join(repo, file), 'utf8')
        .split('\n')
        .flatMap((line, index) =>
          /npx\s+partner-/.test(line) ? [`${file}:${index + 1}: ${line.trim()}`] : [],
        ),
    );
    expect(offenders).toEqual([]);
  });
});
