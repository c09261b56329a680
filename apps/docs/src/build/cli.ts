import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildSite, packageRoot } from './site.js';
import { startStaticServer } from './static-server.js';

// `node dist/build/cli.js [build] [--out DIR] [--guides DIR]` writes the site; `… preview [--port N]` serves dist.
const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { out: { type: 'string' }, guides: { type: 'string' }, port: { type: 'string' } },
});
const command = positionals[0] ?? 'build';
const outDir = values.out ?? join(packageRoot, 'dist');

try {
  if (command === 'build') {
    const started = performance.now();
    const result = await buildSite({ outDir, ...(values.guides ? { guidesDir: values.guides } : {}) });
    console.log(
      `docs: ${result.pages.length} pages (${result.guides.length} guides, home, API reference) written to ${outDir} in ${Math.round(performance.now() - started)} ms`,
    );
  } else if (command === 'preview') {
    const server = await startStaticServer(outDir, { port: Number(values.port ?? 4173) });
    console.log(`docs: serving ${outDir} at ${server.url} (Ctrl-C stops)`);
    const stop = () => void server.close().then(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  } else {
    console.error(`docs: unknown command "${command}"; use "build" or "preview".`);
    process.exitCode = 2;
  }
} catch (error) {
  console.error(`docs: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
}
