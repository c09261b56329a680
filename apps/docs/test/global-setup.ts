import { rm } from 'node:fs/promises';
import type { TestProject } from 'vitest/node';
import { buildSite } from './helpers/build-site.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The site built once for this run (browser, links and internal-words tests). */
    siteDir: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const siteDir = await buildSite();
  project.provide('siteDir', siteDir);
  return () => rm(siteDir, { recursive: true, force: true });
}
