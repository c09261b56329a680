import { execFile } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { checks as conformanceChecks } from '@partner-lending/conformance';
import { startMock } from '@partner-lending/mock';
import { apiOperationIds, operations } from '@partner-lending/spec';
import ts from 'typescript';
import { createMarkdownRenderer } from 'vitepress';
import { describe, expect, it } from 'vitest';
import {
  extractSnippets,
  noTypecheckFlag,
  runnableSnippets,
  type Snippet,
  typeCheckedSnippets,
} from '../src/site/fences.js';
import { loadGuides } from '../src/site/guides.js';
import { docsRoot as packageRoot } from './helpers/build-site.js';

// Every ```ts block of every guide is written to its own module under test-results/snippets (inside
// apps/docs, so `@partner-lending/*` resolve to the workspace packages' built d.ts exactly as a
// partner's project would resolve the published ones) and type-checked with the repository's strict
// compiler options. A failure names the guide and the line.

// The blocks are found by VitePress's own Markdown parser: what is checked is what the site shows.
const markdown = await createMarkdownRenderer(packageRoot);
const guides = loadGuides(join(packageRoot, 'guides'));
const snippets = guides.flatMap((guide) => extractSnippets(markdown.parse(guide.markdown, {}), guide.file));
const checked = typeCheckedSnippets(snippets);
const snippetDir = join(packageRoot, 'test-results/snippets');

/** A block that imports vitest is a test file: it runs under vitest instead of plain Node. */
function isVitestModule(snippet: Snippet): boolean {
  return /from 'vitest'/.test(snippet.code);
}

function moduleName(snippet: Snippet): string {
  return `${snippet.file.replace(/\.md$/, '')}-line-${snippet.line}.ts`;
}

async function typeCheck(): Promise<Map<Snippet, string[]>> {
  await rm(snippetDir, { recursive: true, force: true });
  await mkdir(snippetDir, { recursive: true });
  const byFile = new Map<string, Snippet>();
  for (const snippet of checked) {
    const file = join(snippetDir, moduleName(snippet));
    byFile.set(file, snippet);
    await writeFile(file, snippet.code);
  }
  const config = ts.getParsedCommandLineOfConfigFile(
    join(packageRoot, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      },
    },
  );
  if (!config) throw new Error('cannot read apps/docs/tsconfig.json');
  const program = ts.createProgram([...byFile.keys()], { ...config.options, noEmit: true });
  const errors = new Map<Snippet, string[]>();
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const snippet = diagnostic.file ? byFile.get(diagnostic.file.fileName) : undefined;
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    if (!snippet || !diagnostic.file || diagnostic.start === undefined) {
      // A global error (options, missing types) concerns every snippet: attribute it to the first.
      const first = checked[0];
      if (first) errors.set(first, [...(errors.get(first) ?? []), `TS${diagnostic.code}: ${message}`]);
      continue;
    }
    const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
    const where = `guides/${snippet.file}:${snippet.codeLine + line}:${character + 1}`;
    errors.set(snippet, [...(errors.get(snippet) ?? []), `${where} TS${diagnostic.code}: ${message}`]);
  }
  return errors;
}

const errors = checked.length > 0 ? await typeCheck() : new Map<Snippet, string[]>();

describe('guide snippets', () => {
  it('every guide has at least one code block, and TypeScript blocks exist to check', () => {
    expect(checked.length).toBeGreaterThan(0);
    for (const guide of guides) {
      expect(
        snippets.some((s) => s.file === guide.file),
        `${guide.file} has no code block`,
      ).toBe(true);
    }
  });

  it.each(checked.map((snippet) => [`${snippet.file}:${snippet.line}`, snippet] as const))(
    'type-checks %s against the workspace packages',
    (_name, snippet) => {
      expect(errors.get(snippet) ?? [], `guides/${snippet.file}:${snippet.line}`).toEqual([]);
    },
  );

  it(`lists the blocks opted out with "${noTypecheckFlag}" (kept rare: pseudo-code only)`, () => {
    const skipped = snippets
      .filter((s) => s.flags.includes(noTypecheckFlag))
      .map((s) => `${s.file}:${s.line}`);
    expect(skipped.length, `opted out: ${skipped.join(', ')}`).toBeLessThanOrEqual(2);
  });
});

describe('runnable guide snippets (flag "run")', () => {
  const runnable = runnableSnippets(snippets);

  it('the quick start has one: the first call a newcomer makes', () => {
    expect(runnable.some((s) => s.file.endsWith('quick-start.md'))).toBe(true);
  });

  const nodeSnippets = runnable.filter((snippet) => !isVitestModule(snippet));
  const vitestSnippets = runnable.filter(isVitestModule);

  it.each(nodeSnippets.map((snippet) => [`${snippet.file}:${snippet.line}`, snippet] as const))(
    'runs %s with Node against the mock, with the PARTNER_* variables set',
    { timeout: 30_000 },
    async (_name, snippet) => {
      const dir = join(packageRoot, 'test-results/run');
      await mkdir(dir, { recursive: true });
      const file = join(dir, moduleName(snippet).replace(/\.ts$/, '.mjs'));
      const { outputText } = ts.transpileModule(snippet.code, {
        compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
      });
      await writeFile(file, outputText);
      const mock = await startMock();
      try {
        const demo = mock.clients[0]!;
        const { stdout } = await promisify(execFile)(process.execPath, [file], {
          cwd: packageRoot,
          timeout: 25_000,
          env: {
            PATH: process.env.PATH,
            PARTNER_AUTH_URL: mock.authUrl,
            PARTNER_BASE_URL: mock.baseUrl,
            PARTNER_CLIENT_ID: demo.clientId,
            PARTNER_CLIENT_SECRET: demo.clientSecret,
          },
        });
        expect(stdout.length, `guides/${snippet.file}:${snippet.line} printed nothing`).toBeGreaterThan(0);
        expect(stdout).not.toContain(demo.clientSecret);
        // A block that starts its own mock (directly, or as the conformance suite's embedded target)
        // talks to that one; the others must have used the PARTNER_* variables, so this mock.
        if (!/\b(startMock|runConformance)\(/.test(snippet.code)) {
          expect(mock.tokenRequestCount()).toBeGreaterThan(0);
        }
      } finally {
        await mock.close();
      }
    },
  );

  // A block that is a vitest test file (the mock guide's example of a partner's own test suite) runs
  // in its own vitest process, with no configuration and no PARTNER_* variable.
  it.each(vitestSnippets.map((snippet) => [`${snippet.file}:${snippet.line}`, snippet] as const))(
    'runs %s as a vitest test file',
    { timeout: 60_000 },
    async (_name, snippet) => {
      const dir = join(packageRoot, 'test-results/vitest', moduleName(snippet).replace(/\.ts$/, ''));
      await rm(dir, { recursive: true, force: true });
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, 'example.test.ts'), snippet.code);
      // Its own config, so that vitest does not pick up apps/docs/vitest.config.ts from a parent folder.
      await writeFile(
        join(dir, 'vitest.config.mjs'),
        "export default { test: { include: ['example.test.ts'] } };\n",
      );
      const vitest = join(
        dirname(createRequire(import.meta.url).resolve('vitest/package.json')),
        'vitest.mjs',
      );
      const run = promisify(execFile)(
        process.execPath,
        [vitest, 'run', '--root', dir, '--reporter', 'verbose', '--no-color'],
        { cwd: dir, timeout: 55_000, env: { PATH: process.env.PATH, CI: '1' } },
      );
      const { stdout } = await run.catch((error: { stdout?: string; stderr?: string }) => {
        throw new Error(
          `guides/${snippet.file}:${snippet.line} failed under vitest:\n${error.stdout}${error.stderr}`,
        );
      });
      const names = [...snippet.code.matchAll(/^it\('([^']+)'/gm)].map((match) => match[1]);
      expect(names.length, `guides/${snippet.file}:${snippet.line} has no it('…')`).toBeGreaterThan(0);
      for (const name of names)
        expect(stdout, `guides/${snippet.file}:${snippet.line}`).toMatch(`✓ example.test.ts > ${name}`);
    },
  );
});

describe('facts the guides restate from the spec', () => {
  it("the authentication guide's scope table is the spec's operation → scope map", () => {
    const guide = guides.find((g) => g.slug === 'authentication');
    const rows = [
      ...(guide?.markdown ?? '').matchAll(/^\| `(\w+)` \| `(GET|POST) ([^`]+)` \| `([^`]+)` \|$/gm),
    ].map(([, id, method, path, scope]) => ({ id, method, path, scope }));
    expect(rows).toEqual(
      apiOperationIds.map((id) => ({
        id,
        method: operations[id].method,
        path: operations[id].path,
        scope: operations[id].scope,
      })),
    );
  });

  it("the certification guide's check tables are the conformance suite's catalogue", () => {
    const guide = guides.find((g) => g.slug === 'certification');
    const rows = [
      ...(guide?.markdown ?? '').matchAll(/^\| `([a-z0-9-]+)` \| (must|should) \| (.+) \| (.+) \|$/gm),
    ].map(([, id, severity, title, reference]) => ({
      id,
      severity,
      title: title?.replaceAll('\\|', '|'),
      reference,
    }));
    expect(rows).toEqual(
      conformanceChecks.map(({ id, severity, title, reference }) => ({ id, severity, title, reference })),
    );
  });

  it.each([
    ['certification', 'partner-conformance', '@partner-lending/conformance'],
    ['mock', 'partner-mock', '@partner-lending/mock'],
  ])('the %s guide documents exactly the flags of `%s --help`', async (slug, bin, pkg) => {
    const require = createRequire(import.meta.url);
    const manifest = require(`${pkg}/package.json`) as { bin: Record<string, string> };
    const launcher = join(dirname(require.resolve(`${pkg}/package.json`)), manifest.bin[bin] ?? '');
    const { stdout } = await promisify(execFile)(process.execPath, [launcher, '--help'], { timeout: 20_000 });
    const flagsOf = (text: string) =>
      new Set(
        [...text.matchAll(/(?<![\w-])--[a-z][a-z-]+/g)].map(([flag]) => flag).filter((f) => f !== '--help'),
      );
    const guide = guides.find((g) => g.slug === slug)?.markdown ?? '';
    // npm's own flags (npm install --save-dev) and Node's are not the tool's.
    const documented = flagsOf(
      guide
        .split('\n')
        .filter((line) => !/\bnpm (install|ci)\b|--env-file/.test(line))
        .join('\n'),
    );
    const offered = flagsOf(stdout);
    offered.delete('--version');
    expect([...documented].sort(), `flags in guides/${guides.find((g) => g.slug === slug)?.file}`).toEqual(
      [...offered].sort(),
    );
  });
});
