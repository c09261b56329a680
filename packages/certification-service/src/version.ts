import { createRequire } from 'node:module';

/** The service's name and version (from its package.json). */
export const tool: { name: string; version: string } = (() => {
  const { name, version } = createRequire(import.meta.url)('../package.json') as {
    name: string;
    version: string;
  };
  return { name, version };
})();
