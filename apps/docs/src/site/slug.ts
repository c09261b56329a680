// The heading ids of the site. VitePress's own slug function (1.6), set explicitly in the config so
// that the links the build derives (reference → guide sections) use exactly the ids the pages get.
// biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point
const rControl = /[\u0000-\u001f]/g;
const rSpecial = /[\s~`!@#$%^&*()\-_+=[\]{}|\\;:"'“”‘’<>,.?/]+/g;
const rCombining = /[\u0300-\u036F]/g;

export function slugify(text: string): string {
  return text
    .normalize('NFKD')
    .replace(rCombining, '')
    .replace(rControl, '')
    .replace(rSpecial, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^-+|-+$/g, '')
    .replace(/^(\d)/, '_$1')
    .toLowerCase();
}

/** The text of a Markdown heading as the page shows it: inline code and emphasis markers dropped. */
export function headingText(markdown: string): string {
  return markdown
    .replace(/\s*\{#[^}]+\}\s*$/, '')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/(\*\*|__|\*|_)(\S(?:.*?\S)?)\1/g, '$2')
    .trim();
}

/** The id of a heading line's text: its `{#custom}` id, or the slug of its text. */
export function headingId(markdown: string): string {
  const custom = /\{#([^}]+)\}\s*$/.exec(markdown)?.[1];
  return custom ?? slugify(headingText(markdown));
}
