import { fileURLToPath } from 'node:url';
import { partsNeverImport } from '../../../test-support/layers.js';

// Imports point one way: index.ts exports, token-provider.ts composes the parts, and no part imports either of them.
partsNeverImport(fileURLToPath(new URL('../src/', import.meta.url)), ['index.ts', 'token-provider.ts']);
