// Generates src/generated/openapi.ts from the bundled spec of @partner-lending/spec with
// openapi-typescript. With --check, fails (naming the command to run) when the committed file differs.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const target = join(root, 'src/generated/openapi.ts');
const specPath = createRequire(import.meta.url).resolve('@partner-lending/spec/openapi.json');

const ast = await openapiTS(pathToFileURL(specPath), { alphabetize: false, exportType: false });
const header =
  '// Generated from @partner-lending/spec (spec/openapi.yaml) by `pnpm generate` with openapi-typescript. Do not edit.\n\n';
const fresh = header + astToString(ast);

if (process.argv.includes('--check')) {
  const current = await readFile(target, 'utf8').catch(() => '');
  if (current !== fresh) {
    console.error(
      'packages/sdk/src/generated/openapi.ts is out of date with spec/openapi.yaml. Run `pnpm generate` and commit the result.',
    );
    process.exit(1);
  }
  console.log('packages/sdk/src/generated/openapi.ts is up to date.');
} else {
  await mkdir(dirname(target), { recursive: true });
  await writeFile(target, fresh);
  console.log('wrote packages/sdk/src/generated/openapi.ts');
}
