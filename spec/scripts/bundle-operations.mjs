// After `redocly bundle` wrote dist/openapi.json: derive the operation map from the bundled document,
// check it equals the committed generated module's source of truth, and write dist/operations.json.
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { deriveOperationMap } from './operation-map.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bundled = JSON.parse(await readFile(join(root, 'dist/openapi.json'), 'utf8'));
const fromBundle = deriveOperationMap(bundled);
const fromSource = deriveOperationMap(parse(await readFile(join(root, 'openapi.yaml'), 'utf8')));
if (JSON.stringify(fromBundle) !== JSON.stringify(fromSource)) {
  console.error(
    'The bundled spec yields another operation map than spec/openapi.yaml. Check `redocly bundle`.',
  );
  process.exit(1);
}
await writeFile(join(root, 'dist/operations.json'), `${JSON.stringify(fromBundle, null, 2)}\n`);
console.log('wrote spec/dist/operations.json');
