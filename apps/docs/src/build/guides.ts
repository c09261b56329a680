import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import MarkdownIt from 'markdown-it';

/** A guide source file: `guides/NN-slug.md`, where NN fixes its place in the navigation. */
export interface GuideSource {
  file: string;
  order: number;
  /** Output page name without extension, e.g. `quick-start` → `quick-start.html`. */
  slug: string;
  markdown: string;
  /** Text of the single level-1 heading. */
  title: string;
  /** Plain text of the first paragraph after the title, shown on the home page. */
  summary: string;
}

const GUIDE_FILE = /^(\d{2})-([a-z0-9]+(?:-[a-z0-9]+)*)\.md$/;
const parser = new MarkdownIt();

export class GuideError extends Error {
  override name = 'GuideError';
}

/** Reads a guide's title and summary from its Markdown; throws a GuideError when either is missing. */
export function parseGuide(file: string, markdown: string): GuideSource {
  const match = GUIDE_FILE.exec(file);
  if (!match) {
    throw new GuideError(
      `${file}: guide file names are NN-slug.md (two digits for the order, then lowercase words joined by "-"), e.g. 01-quick-start.md.`,
    );
  }
  const tokens = parser.parse(markdown, {});
  const titles: string[] = [];
  let summary = '';
  for (let index = 0; index < tokens.length; index += 1) {
    const token = tokens[index];
    if (token?.type === 'heading_open' && token.tag === 'h1') titles.push(tokens[index + 1]?.content ?? '');
    if (token?.type === 'paragraph_open' && summary === '' && titles.length > 0) {
      summary = plainText(tokens[index + 1]?.content ?? '');
    }
  }
  if (titles.length !== 1 || titles[0] === '') {
    throw new GuideError(
      `${file}: a guide has exactly one level-1 heading (its title), found ${titles.length}; start the file with "# Title".`,
    );
  }
  if (summary === '') {
    throw new GuideError(
      `${file}: no paragraph after the title; the first paragraph is the guide's summary on the home page.`,
    );
  }
  return { file, order: Number(match[1]), slug: match[2] ?? '', markdown, title: titles[0] ?? '', summary };
}

/** Loads every `NN-slug.md` guide of `dir`, in navigation order. */
export async function loadGuides(dir: string): Promise<GuideSource[]> {
  const files = (await readdir(dir)).filter((name) => name.endsWith('.md')).sort();
  const guides = await Promise.all(
    files.map(async (file) => parseGuide(file, await readFile(join(dir, file), 'utf8'))),
  );
  const seen = new Map<number, string>();
  for (const guide of guides) {
    const other = seen.get(guide.order);
    if (other) throw new GuideError(`${guide.file}: order ${guide.order} is also used by ${other}.`);
    seen.set(guide.order, guide.file);
  }
  return guides.sort((a, b) => a.order - b.order);
}

/** Inline Markdown to plain text: code spans, links and emphasis keep only their text. */
export function plainText(inline: string): string {
  return inline
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*_]/g, '')
    .replace(/\s+/g, ' ')
    .trim();
}
