import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { createMarkdownRenderer } from 'vitepress';
import type { FenceLanguage, Snippet } from '../../src/site/fences.js';
import { docsRoot } from './build-site.js';
import { type BlockRun, bins, type ShellRunner } from './guide-shell.js';

// The shell blocks of every Markdown page a user copies commands from: the guides and the READMEs (the
// root's, every package's). Parsed with VitePress's own renderer, as the guides are shown. A `sh`,
// `bash` or `shell` block is a command to run; output, and commands a test cannot honestly run (each
// with a one-line `<!-- shown, not run: why -->` above it), are `console` or `text`.

export const repoRoot = join(docsRoot, '..', '..');
const shellLanguages = new Set(['sh', 'bash', 'shell']);

/** Every Markdown file whose commands a reader copies, relative to the repository's root. */
export function documentedFiles(): string[] {
  const guides = readdirSync(join(docsRoot, 'guides'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => relative(repoRoot, join(docsRoot, 'guides', name)));
  const packages = readdirSync(join(repoRoot, 'packages'))
    .map((name) => join('packages', name, 'README.md'))
    .filter((file) => {
      try {
        readFileSync(join(repoRoot, file));
        return true;
      } catch {
        return false;
      }
    });
  // apps/docs/README.md is the docs site's own contributor page (its commands build and test the site), not
  // a page a user copies from.
  return [...guides, 'README.md', 'spec/README.md', ...packages].sort();
}

/**
 * A file's shell blocks (its path relative to the repository in `file`), in order, as the site's
 * renderer parses them. (The site's build checks the guides' fences; a README may also have unlabelled
 * ones, which are not shell blocks.)
 */
export async function shellBlocksOf(file: string): Promise<Snippet[]> {
  const markdown = await createMarkdownRenderer(docsRoot);
  const text = readFileSync(join(repoRoot, file), 'utf8');
  return markdown
    .parse(text, {})
    .filter((token) => token.type === 'fence' && shellLanguages.has(token.info.trim().split(/\s+/)[0]!))
    .map((token) => {
      const line = (token.map?.[0] ?? 0) + 1;
      const [language, ...flags] = token.info.trim().split(/\s+/);
      return {
        file,
        line,
        codeLine: line + 1,
        language: language as FenceLanguage,
        flags,
        code: token.content,
      };
    });
}

/** The one shell block of `file` whose code starts with `start`; throws naming the file otherwise. */
export async function shellBlock(file: string, start: string): Promise<Snippet> {
  const found = (await shellBlocksOf(file)).filter((block) => block.code.startsWith(start));
  if (found.length !== 1)
    throw new Error(
      `${file}: expected one sh block starting ${JSON.stringify(start)}, found ${found.length}`,
    );
  return found[0]!;
}

/**
 * `code` with each placeholder the page documents replaced by what this test runs against. Throws when a
 * placeholder is not in the block any more, so a changed page fails here rather than running unsubstituted.
 */
export function substitute(block: Snippet, pairs: ReadonlyArray<readonly [string, string]>): string {
  let code = block.code;
  for (const [placeholder, value] of pairs) {
    if (!code.includes(placeholder))
      throw new Error(`${block.file}:${block.line}: the block no longer has ${JSON.stringify(placeholder)}`);
    code = code.replaceAll(placeholder, value);
  }
  return code;
}

export interface ServerBlock {
  /** What it printed until it was ready. */
  output: string;
  /** Stops it (SIGTERM to its process group) and waits for its end. */
  stop(): Promise<void>;
}

/**
 * Runs a block that starts a server (its last command runs until stopped), in its own process group,
 * with `bash -e -o pipefail`, until its output matches `ready`. Throws naming the page's file and line
 * when it exits or does not get ready within `timeoutMs`.
 */
export async function startServerBlock(
  block: Snippet,
  options: { code?: string; cwd: string; env: Record<string, string>; ready: RegExp; timeoutMs?: number },
): Promise<ServerBlock> {
  const child = spawn('bash', ['-e', '-o', 'pipefail', '-c', options.code ?? block.code], {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        // already gone
      }
      await exited;
    }
  };
  const ready = await new Promise<boolean | string>((resolve) => {
    const timer = setTimeout(() => resolve('did not get ready'), options.timeoutMs ?? 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (options.ready.test(output)) {
        clearTimeout(timer);
        resolve(true);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      resolve(`exited with ${code}`);
    });
  });
  if (ready !== true) {
    await stop();
    throw new Error(
      `${block.file}:${block.line}: the block ${ready}:\n${options.code ?? block.code}\n--- output\n${output.slice(-2000)}`,
    );
  }
  return { output, stop };
}

/**
 * An `npx` in `dir` that takes the forms the pages use (`npx -p @partner-lending/PKG COMMAND …`, and
 * `npx @partner-lending/conformance …`) and runs the workspace's build of that command instead of the
 * registry's; any other form fails with exit 64. Put `dir` first on PATH.
 */
export async function npxShim(dir: string): Promise<void> {
  const bin = (name: string) => join(bins, name);
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, 'npx'),
    `#!/bin/sh
case "$1 $2 $3" in
  "-p @partner-lending/conformance partner-conformance") shift 3; exec "${bin('partner-conformance')}" "$@" ;;
  "-p @partner-lending/mock partner-mock") shift 3; exec "${bin('partner-mock')}" "$@" ;;
  "-p @partner-lending/certification-service partner-certification-service") shift 3; exec "${bin('partner-certification-service')}" "$@" ;;
esac
if [ "$1" = @partner-lending/conformance ]; then shift; exec "${bin('partner-conformance')}" "$@"; fi
echo "unexpected npx $*" >&2
exit 64
`,
  );
  await chmod(join(dir, 'npx'), 0o755);
}

/**
 * `shell.run(block, code)`, its failure naming the page by its path in the repository (the guide runner
 * names guides only, as `guides/FILE`).
 */
export async function runBlock(shell: ShellRunner, block: Snippet, code?: string): Promise<BlockRun> {
  try {
    return await shell.run(block, code);
  } catch (error) {
    const message = (error as Error).message.replace(`guides/${block.file}:`, `${block.file}:`);
    throw new Error(message.replace("the guide's block", 'the block'));
  }
}
