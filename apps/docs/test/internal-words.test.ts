import { execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { listFiles } from './helpers/check-links.js';
import { findInternalWords, formatHits, type WordHit } from './helpers/internal-words.js';

// Nowhere a user looks says "seed", "the source", "DESIGN.md" or "shared/": not the built site (pages,
// search index, the reference's spec), not the files of any published package as npm would ship them
// (`pnpm pack`), not the command-line help, the mock's --json line or the conformance reports. A
// failure names file (or output), line, word and the text around it.

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const repoRoot = join(dirname(require.resolve('@partner-lending/spec/package.json')), '..');
const binary = /\.(png|jpe?g|gif|ico|woff2?|ttf|gz|tgz)$/i;

/** Third-party code shipped as-is: its own words are not ours (our text in the site is checked in the pages). */
const thirdParty = [/^redoc\/redoc\.standalone\.js/, /^assets\/chunks\/(framework|theme|VPLocalSearchBox)\./];

async function scanDir(dir: string, label: string, skip: readonly RegExp[] = []): Promise<WordHit[]> {
  const hits: WordHit[] = [];
  for (const file of listFiles(dir)) {
    if (binary.test(file) || skip.some((s) => s.test(file))) continue;
    hits.push(...findInternalWords(await readFile(join(dir, file), 'utf8'), `${label}/${file}`));
  }
  return hits;
}

const published = [
  'spec',
  'packages/auth',
  'packages/sdk',
  'packages/mock',
  'packages/conformance',
  'packages/token-store-redis',
];

let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'partner-docs-words-'));
});
afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

describe('internal words', () => {
  it('the scanner finds each word, with file, line and excerpt (so an empty result means something)', () => {
    const hits = findInternalWords(
      'ok line\nas the Seed §4.1 says\nsee The source\nread DESIGN.md and ../shared/x',
      'sample.txt',
    );
    expect(hits.map((h) => `${h.where}:${h.line}:${h.word}`)).toEqual([
      'sample.txt:2:seed',
      'sample.txt:3:the source',
      'sample.txt:4:DESIGN.md',
      'sample.txt:4:shared/',
    ]);
    expect(formatHits(hits.slice(0, 1))).toBe('sample.txt:2: "seed" in …as the Seed §4.1 says…');
  });

  it('the built site has none (pages, search index, spec copies)', async () => {
    const siteDir = inject('siteDir');
    const files = listFiles(siteDir);
    expect(files.filter((f) => f.endsWith('.html')).length).toBeGreaterThan(10);
    const hits = await scanDir(siteDir, 'site', thirdParty);
    expect(hits, formatHits(hits)).toEqual([]);
  });

  it.each(published)('the packed tarball of %s has none', { timeout: 120_000 }, async (pkg) => {
    const dest = join(work, pkg.replace('/', '-'));
    await mkdir(dest, { recursive: true });
    await run('pnpm', ['pack', '--pack-destination', dest], { cwd: join(repoRoot, pkg), timeout: 100_000 });
    const tarball = (await readdir(dest)).find((f) => f.endsWith('.tgz'));
    expect(tarball, `pnpm pack wrote no tarball for ${pkg}`).toBeDefined();
    await run('tar', ['-xzf', tarball!, '-C', dest], { cwd: dest });
    const files = listFiles(join(dest, 'package'));
    expect(files).toContain('package.json');
    const hits = await scanDir(join(dest, 'package'), `${pkg} (tarball)`);
    expect(hits, formatHits(hits)).toEqual([]);
  });

  const bin = (pkg: string, name: string) => join(repoRoot, pkg, 'bin', `${name}.js`);

  it('the command-line help has none', async () => {
    const hits: WordHit[] = [];
    for (const [pkg, name] of [
      ['packages/conformance', 'partner-conformance'],
      ['packages/mock', 'partner-mock'],
    ] as const) {
      const { stdout, stderr } = await run(process.execPath, [bin(pkg, name), '--help'], { timeout: 30_000 });
      expect(stdout.length, `${name} --help printed nothing`).toBeGreaterThan(100);
      hits.push(...findInternalWords(stdout + stderr, `${name} --help`));
    }
    expect(hits, formatHits(hits)).toEqual([]);
  });

  it('the JSON line of partner-mock --json has none', async () => {
    const child = spawn(process.execPath, [bin('packages/mock', 'partner-mock'), '--json'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        let out = '';
        const timer = setTimeout(
          () => reject(new Error(`partner-mock --json printed no line: ${out}`)),
          20_000,
        );
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes('\n')) {
            clearTimeout(timer);
            resolve(out.split('\n')[0]!);
          }
        });
        child.on('exit', (code) => reject(new Error(`partner-mock exited (${code}): ${out}`)));
      });
      expect(() => JSON.parse(line)).not.toThrow();
      const hits = findInternalWords(line, 'partner-mock --json');
      expect(hits, formatHits(hits)).toEqual([]);
    } finally {
      child.kill();
    }
  });

  it('the conformance run against the embedded mock (console, JSON, JUnit, HTML reports) has none', {
    timeout: 120_000,
  }, async () => {
    const out = join(work, 'reports');
    await mkdir(out, { recursive: true });
    const args = [
      bin('packages/conformance', 'partner-conformance'),
      '--report-json',
      join(out, 'report.json'),
      '--report-junit',
      join(out, 'junit.xml'),
      '--report-html',
      join(out, 'report.html'),
    ];
    const result = await run(process.execPath, args, { timeout: 110_000, maxBuffer: 20 * 1024 * 1024 }).catch(
      (error: { stdout?: string; stderr?: string; code?: number }) => error,
    );
    const console = `${result.stdout ?? ''}${result.stderr ?? ''}`;
    expect(console).toMatch(/checks?:/);
    const hits = [
      ...findInternalWords(console, 'partner-conformance (console)'),
      ...(await scanDir(out, 'partner-conformance reports')),
    ];
    expect(listFiles(out).sort()).toEqual(['junit.xml', 'report.html', 'report.json']);
    expect(hits, formatHits(hits)).toEqual([]);
  });
});
