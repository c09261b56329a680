import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { headingId, headingText } from './slug.js';

/** One guide: `guides/NN-slug.md`, published as `/slug.html`. */
export interface Guide {
  /** File name inside `guides/`, e.g. `02-authentication.md`. */
  file: string;
  /** The `NN` of the file name: the guide's place in the sidebar. */
  order: number;
  /** The page name, e.g. `authentication` (`/authentication.html`). */
  slug: string;
  /** The text of the single `# Title`. */
  title: string;
  /** The first paragraph after the title. */
  summary: string;
  markdown: string;
}

export class GuideError extends Error {
  override name = 'GuideError';
}

const GUIDE_FILE = /^(\d{2})-([a-z0-9]+(?:-[a-z0-9]+)*)\.md$/;

/** Lines outside fenced code blocks, with their 1-based numbers. */
export function proseLines(markdown: string): Array<{ line: number; text: string }> {
  const out: Array<{ line: number; text: string }> = [];
  let fence: string | undefined;
  markdown.split('\n').forEach((text, index) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(text)?.[1];
    if (marker && (fence === undefined || (marker[0] === fence[0] && marker.length >= fence.length))) {
      fence = fence === undefined ? marker : undefined;
      return;
    }
    if (fence === undefined) out.push({ line: index + 1, text });
  });
  return out;
}

export function parseGuide(file: string, markdown: string): Guide {
  const name = GUIDE_FILE.exec(file);
  if (!name) {
    throw new GuideError(
      `guides/${file}: a guide's file name is NN-slug.md (two digits, then lowercase words joined by "-").`,
    );
  }
  const lines = proseLines(markdown);
  const titles = lines.filter(({ text }) => /^# /.test(text));
  if (titles.length !== 1) {
    throw new GuideError(
      `guides/${file}: a guide has exactly one "# Title" line; found ${titles.length}${titles.map((t) => ` (line ${t.line})`).join('')}.`,
    );
  }
  const title = headingText(titles[0]!.text.slice(2));
  const after = lines.filter(({ line }) => line > titles[0]!.line);
  const start = after.findIndex(({ text }) => text.trim() !== '');
  const paragraph: string[] = [];
  for (const { text } of after.slice(start === -1 ? after.length : start)) {
    if (text.trim() === '' || /^#/.test(text)) break;
    paragraph.push(text.trim());
  }
  if (paragraph.length === 0) {
    throw new GuideError(`guides/${file}: the title must be followed by a summary paragraph.`);
  }
  return {
    file,
    order: Number(name[1]),
    slug: name[2]!,
    title,
    summary: paragraph.join(' '),
    markdown,
  };
}

/** Every `NN-slug.md` in `dir`, ordered by `NN`. Two guides with one number or one slug are an error. */
export function loadGuides(dir: string): Guide[] {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.md'))
    .sort();
  const guides = files.map((file) => parseGuide(file, readFileSync(join(dir, file), 'utf8')));
  for (const key of ['order', 'slug'] as const) {
    const seen = new Map<string | number, string>();
    for (const guide of guides) {
      const other = seen.get(guide[key]);
      if (other) throw new GuideError(`guides/${guide.file} and guides/${other} have the same ${key}.`);
      seen.set(guide[key], guide.file);
    }
  }
  return guides.sort((a, b) => a.order - b.order);
}

/** A section of a guide: the heading's id and text (the title counts as the page's top). */
export interface Section {
  id: string;
  text: string;
  level: number;
  line: number;
}

export function sections(markdown: string): Section[] {
  return proseLines(markdown).flatMap(({ line, text }) => {
    const heading = /^(#{1,6})\s+(.+?)\s*#*\s*$/.exec(text);
    if (!heading) return [];
    return [{ id: headingId(heading[2]!), text: headingText(heading[2]!), level: heading[1]!.length, line }];
  });
}

/** The section a line belongs to: the nearest heading above it. */
export function sectionAt(markdown: string, line: number): Section | undefined {
  return sections(markdown)
    .filter((s) => s.line <= line)
    .at(-1);
}

/** VitePress `rewrites`: `guides/NN-slug.md` → `slug.md`. */
export function guideRewrites(guides: readonly Guide[]): Record<string, string> {
  return Object.fromEntries(guides.map((g) => [`guides/${g.file}`, `${g.slug}.md`]));
}
