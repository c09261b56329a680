// Writes src/generated/operations.ts from openapi.yaml. With --check, fails instead of writing when
// the committed file differs from a fresh generation (CI runs this).
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { deriveOperationMap, renderOperationModule } from './operation-map.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const target = join(root, 'src/generated/operations.ts');
const doc = parse(await readFile(join(root, 'openapi.yaml'), 'utf8'));
const fresh = renderOperationModule(deriveOperationMap(doc));

if (process.argv.includes('--check')) {
  const current = await readFile(target, 'utf8').catch(() => '');
  if (current !== fresh) {
    console.error(
      'spec/src/generated/operations.ts is out of date with spec/openapi.yaml. Run `pnpm generate` and commit the result.',
    );
    process.exit(1);
  }
  console.log('spec/src/generated/operations.ts is up to date.');
} else {
  await mkdir(dirname(target), { recursive: true });
  await writeFile(target, fresh);
  console.log('wrote spec/src/generated/operations.ts');
}
