import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { changelogMarkdown, loadChangelogs, loadChangesets } from './changelog.js';
import { type Guide, loadGuides } from './guides.js';
import { referenceAssets } from './redoc-options.js';
import {
  type ReferenceLink,
  type ReferencePage,
  referenceLinks,
  referencePages,
  referenceSpec,
  type Spec,
  vendorRedocBundle,
} from './reference.js';

const require = createRequire(import.meta.url);

/** apps/docs (from src/site). */
export const docsRoot = fileURLToPath(new URL('../../', import.meta.url));
/** The repository's root. */
export const repoRoot = join(docsRoot, '../..');

/** Pages of the site besides the guides that link to the reference (their links are reversed too). */
export const ownPages = [
  { file: 'api-at-a-glance.md', url: '/api-at-a-glance.html' },
  { file: 'architecture.md', url: '/architecture.html' },
] as const;

export interface SiteSources {
  guides: Guide[];
  spec: Spec;
  links: ReferenceLink[];
  referencePages: ReferencePage[];
}

function titleOf(markdown: string, file: string): string {
  const title = /^# (.+)$/m.exec(markdown)?.[1];
  if (!title) throw new Error(`${file}: no "# Title" line.`);
  return title.trim();
}

/** Reads the guides, the bundled spec and the pages that link to the reference. */
export function readSources(root = docsRoot): SiteSources {
  const guides = loadGuides(join(root, 'guides'));
  let spec: Spec;
  try {
    spec = JSON.parse(readFileSync(require.resolve('@partner-lending/spec/openapi.json'), 'utf8')) as Spec;
  } catch (error) {
    throw new Error(
      'The docs need the bundled spec (@partner-lending/spec/openapi.json); build it first: `pnpm --filter @partner-lending/docs build` builds the spec before the site.',
      { cause: error },
    );
  }
  const pages = [
    ...guides.map((g) => ({
      file: `guides/${g.file}`,
      markdown: g.markdown,
      title: g.title,
      url: `/${g.slug}.html`,
    })),
    ...ownPages.map(({ file, url }) => {
      const markdown = readFileSync(join(root, file), 'utf8');
      return { file, markdown, title: titleOf(markdown, file), url };
    }),
  ];
  const links = referenceLinks(pages, spec);
  return { guides, spec, links, referencePages: referencePages(spec, links) };
}

/**
 * Writes what the site is built from but is not written by hand, and is not committed:
 * - `public/` (copied as-is by VitePress): Redoc's vendored bundle and its licence, the display copy
 *   of the spec, the bundled spec unchanged (`openapi.json`);
 * - `generated/`: the reference's text pages (one per tag) and the changelog page.
 */
export function writeGenerated(root = docsRoot): SiteSources {
  const sources = readSources(root);
  const publicDir = join(root, 'public');
  const generatedDir = join(root, 'generated');
  rmSync(publicDir, { recursive: true, force: true });
  rmSync(generatedDir, { recursive: true, force: true });
  mkdirSync(join(publicDir, dirname(referenceAssets.bundle)), { recursive: true });
  mkdirSync(join(generatedDir, 'reference'), { recursive: true });

  const redocDir = dirname(require.resolve('redoc/package.json'));
  const bundle = readFileSync(join(redocDir, 'bundles/redoc.standalone.js'), 'utf8');
  writeFileSync(join(publicDir, referenceAssets.bundle), vendorRedocBundle(bundle));
  writeFileSync(
    join(publicDir, `${referenceAssets.bundle}.LICENSE.txt`),
    readFileSync(join(redocDir, 'bundles/redoc.standalone.js.LICENSE.txt'), 'utf8'),
  );
  writeFileSync(join(publicDir, referenceAssets.download), `${JSON.stringify(sources.spec, null, 2)}\n`);
  // The diagrams of the guides: SVG sources kept in diagrams/, served by the site itself (no CDN).
  cpSync(join(root, 'diagrams'), join(publicDir, 'diagrams'), { recursive: true });
  // The shell journey of the certification guides, downloadable from the site as it ships in the package.
  mkdirSync(join(publicDir, 'examples'), { recursive: true });
  cpSync(
    join(root, '../../packages/certification-service/examples/curl-journey.sh'),
    join(publicDir, 'examples/curl-journey.sh'),
  );
  writeFileSync(
    join(publicDir, referenceAssets.spec),
    `${JSON.stringify(referenceSpec(sources.spec, sources.links))}\n`,
  );
  for (const page of sources.referencePages) writeFileSync(join(generatedDir, page.file), page.markdown);
  writeFileSync(
    join(generatedDir, 'changelog.md'),
    changelogMarkdown(loadChangesets(repoRoot), loadChangelogs(repoRoot)),
  );
  return sources;
}
