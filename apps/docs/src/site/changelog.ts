import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { safeMarkdown } from './reference.js';

/** One pending changeset: `.changeset/<name>.md`. */
export interface Changeset {
  name: string;
  /** Package → bump (`major`, `minor`, `patch`). */
  releases: Record<string, string>;
  summary: string;
}

export class ChangelogError extends Error {
  override name = 'ChangelogError';
}

/** Parses a changeset file (YAML front matter of `"package": bump` lines, then the summary). */
export function parseChangeset(name: string, text: string): Changeset {
  const match = /^---\r?\n([\s\S]*?)\r?\n---\r?\n([\s\S]*)$/.exec(text);
  if (!match) throw new ChangelogError(`.changeset/${name}.md has no front matter ("---" lines).`);
  const releases: Record<string, string> = {};
  for (const line of match[1]!.split(/\r?\n/)) {
    if (line.trim() === '') continue;
    const release = /^\s*["']?([^"':]+)["']?\s*:\s*(major|minor|patch)\s*$/.exec(line);
    if (!release)
      throw new ChangelogError(`.changeset/${name}.md: cannot read "${line}" (expected "package": bump).`);
    releases[release[1]!] = release[2]!;
  }
  return { name, releases, summary: match[2]!.trim() };
}

/** The pending changesets of the repository, by file name. */
export function loadChangesets(repoRoot: string): Changeset[] {
  const dir = join(repoRoot, '.changeset');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.md') && f !== 'README.md')
    .sort()
    .map((f) => parseChangeset(f.replace(/\.md$/, ''), readFileSync(join(dir, f), 'utf8')));
}

/** The released history of each package: its CHANGELOG.md (written by `changeset version`), if any. */
export function loadChangelogs(repoRoot: string): Array<{ name: string; markdown: string }> {
  const dirs = ['spec', ...readdirSync(join(repoRoot, 'packages')).map((d) => `packages/${d}`)];
  return dirs.flatMap((dir) => {
    const file = join(repoRoot, dir, 'CHANGELOG.md');
    const manifest = join(repoRoot, dir, 'package.json');
    if (!existsSync(file) || !existsSync(manifest)) return [];
    const { name } = JSON.parse(readFileSync(manifest, 'utf8')) as { name: string };
    return [{ name, markdown: readFileSync(file, 'utf8') }];
  });
}

/** Lowers every heading by `by` levels (a package's `# name` becomes `### name` under the page's `##`). */
function demote(markdown: string, by: number): string {
  let fence = false;
  return markdown
    .split('\n')
    .map((line) => {
      if (/^\s*(```|~~~)/.test(line)) fence = !fence;
      return !fence && /^#{1,6}\s/.test(line) ? `${'#'.repeat(by)}${line}` : line;
    })
    .join('\n');
}

/** The changelog page: what the next release brings (pending changesets, by package), then each package's history. */
export function changelogMarkdown(
  changesets: readonly Changeset[],
  changelogs: ReadonlyArray<{ name: string; markdown: string }>,
): string {
  const lines = [
    '---',
    'editLink: false',
    // Out of the search index: it names every feature once and would rank above the guides.
    'search: false',
    '---',
    '',
    '# Changelog',
    '',
    'What changed for you in each package you install: new features, fixes, and anything you must change when you upgrade (marked **Breaking**; while a package is at 0.x, a minor version may break). "Unreleased" is what the next release brings; the released versions follow, package by package.',
    '',
    '## Unreleased',
    '',
  ];
  const packages = [...new Set(changesets.flatMap((c) => Object.keys(c.releases)))].sort();
  if (packages.length === 0) lines.push('Nothing yet.', '');
  for (const name of packages) {
    lines.push(`### ${name}`, '');
    for (const changeset of changesets.filter((c) => name in c.releases)) {
      const summary = safeMarkdown(changeset.summary)
        .split('\n')
        .map((line, i) => (i === 0 || line.trim() === '' ? line : `  ${line}`))
        .join('\n');
      lines.push(`- **${changeset.releases[name]}** — ${summary}`);
    }
    lines.push('');
  }
  if (changelogs.length > 0) {
    lines.push('## Released', '');
    for (const { name, markdown } of changelogs) {
      const body = safeMarkdown(markdown.replace(/^# .*\n/, '').trim());
      lines.push(`### ${name}`, '', demote(body, 2), '');
    }
  }
  return `${lines.join('\n')}\n`;
}
