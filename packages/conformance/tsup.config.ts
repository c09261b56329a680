import { packageBuild } from '../../tsup.shared.js';

export default packageBuild(['src/index.ts', 'src/cli.ts'], {
  // The documented responses are read from the bundled spec at build time: Node 20 cannot import JSON
  // without an import attribute, which esbuild drops from external imports.
  noExternal: [/^@partner-lending\/spec\/openapi\.json$/],
});
