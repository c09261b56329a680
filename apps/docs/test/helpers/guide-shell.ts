import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createMarkdownRenderer } from 'vitepress';
import { extractSnippets, type Snippet } from '../../src/site/fences.js';
import { type Guide, loadGuides } from '../../src/site/guides.js';
import { docsRoot } from './build-site.js';

// Running a guide's ```sh blocks as written: in the guide's order, in one working directory, each with
// `bash -e -o pipefail`, given only the variables the guide names. A block that fails throws, naming
// the guide's file and line. In a guide run this way, a `sh` block is a command to run; output, and
// commands not to run, are `text` or `console`.

/** The workspace's installed commands (`partner-certification-service`, `partner-conformance`, …). */
export const bins = join(docsRoot, 'node_modules', '.bin');
/** The repository's root. */
export const repoRoot = join(docsRoot, '..', '..');

export interface GuideBlocks {
  guide: Guide;
  /** Every labelled block of the guide, in order. */
  snippets: Snippet[];
  /** Its `sh` blocks, in order. */
  shellBlocks: Snippet[];
  /** The one block of the guide that `test` picks; throws naming the guide when there are none or several. */
  only(what: string, test: (snippet: Snippet) => boolean): Snippet;
}

/** A guide's blocks, parsed by VitePress's own Markdown renderer (what the site shows). */
export async function guideBlocks(slug: string): Promise<GuideBlocks> {
  const markdown = await createMarkdownRenderer(docsRoot);
  const guide = loadGuides(join(docsRoot, 'guides')).find((g) => g.slug === slug);
  if (!guide) throw new Error(`guides/NN-${slug}.md is missing`);
  const snippets = extractSnippets(markdown.parse(guide.markdown, {}), guide.file);
  return {
    guide,
    snippets,
    shellBlocks: snippets.filter((s) => s.language === 'sh'),
    only(what, test) {
      const found = snippets.filter(test);
      if (found.length !== 1)
        throw new Error(`${guide.file}: expected one ${what} block, found ${found.length}`);
      return found[0]!;
    },
  };
}

export interface BlockRun {
  code: number;
  stdout: string;
  stderr: string;
}

export interface ShellRunner {
  /**
   * Runs one block (or `code`, a changed copy of it, for a negative control) in the working directory.
   * A block that prints "Stop with Ctrl+C" is a server: it is left running once it has, and its output
   * so far is returned. Throws `guides/FILE:LINE: the guide's block exited with …` when it fails.
   */
  run(block: Snippet, code?: string): Promise<BlockRun>;
  /** Servers the blocks started. */
  readonly background: ChildProcess[];
  /** Stops the servers the blocks started. */
  stop(): void;
}

/**
 * A runner of a guide's shell blocks in `cwd` with the environment `env()` gives at each block.
 * With `oneShell`, the blocks behave as lines of one shell session (a guide that says "run the blocks in
 * one shell"): the variables a block sets are there for the next ones, kept in `stateFile`.
 */
export function shellRunner(options: {
  cwd: string;
  env: () => Record<string, string>;
  timeoutMs?: number;
  oneShell?: { stateFile: string };
}): ShellRunner {
  const timeoutMs = options.timeoutMs ?? 90_000;
  const background: ChildProcess[] = [];
  async function run(block: Snippet, code = block.code): Promise<BlockRun> {
    const where = `guides/${block.file}:${block.line}`;
    const state = options.oneShell?.stateFile;
    // One shell: every variable set is exported (set -a) and saved once the block succeeded.
    const script = state
      ? `set -a; if [ -f '${state}' ]; then . '${state}'; fi\n${code}\nexport -p > '${state}'`
      : code;
    const child = spawn('bash', ['-e', '-o', 'pipefail', '-c', script], {
      cwd: options.cwd,
      env: options.env(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const outcome = await new Promise<{ code: number | null; server: boolean }>((resolve) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        resolve({ code: null, server: false });
      }, timeoutMs);
      const poll = setInterval(() => {
        if (stdout.includes('Stop with Ctrl+C')) {
          clearTimeout(timer);
          clearInterval(poll);
          resolve({ code: 0, server: true });
        }
      }, 50);
      child.once('exit', (exitCode) => {
        clearTimeout(timer);
        clearInterval(poll);
        resolve({ code: exitCode, server: false });
      });
    });
    if (outcome.server) background.push(child);
    if (outcome.code !== 0)
      throw new Error(
        `${where}: the guide's block exited with ${outcome.code ?? `a timeout (${timeoutMs / 1000} s)`}:\n${code}\n--- stdout\n${stdout.slice(-2000)}\n--- stderr\n${stderr.slice(-2000)}`,
      );
    return { code: 0, stdout, stderr };
  }
  return {
    run,
    background,
    stop() {
      for (const child of background) child.kill('SIGTERM');
    },
  };
}
