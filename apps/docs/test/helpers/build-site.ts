import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const docsRoot = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Builds the site with VitePress, exactly as `pnpm build` does, into a new temporary folder (so a
 * test never looks at a stale dist), in a child process (VitePress and vitest each have their Vite).
 */
export async function buildSite(): Promise<string> {
  const outDir = await mkdtemp(join(tmpdir(), 'partner-docs-site-'));
  const require = createRequire(import.meta.url);
  const cli = join(dirname(require.resolve('vitepress/package.json')), 'bin/vitepress.js');
  await promisify(execFile)(process.execPath, [cli, 'build'], {
    cwd: docsRoot,
    timeout: 180_000,
    maxBuffer: 10 * 1024 * 1024,
    env: { ...process.env, DOCS_OUT_DIR: outDir },
  }).catch((error: { stdout?: string; stderr?: string }) => {
    throw new Error(`vitepress build failed:\n${error.stdout ?? ''}${error.stderr ?? ''}`);
  });
  return outDir;
}
