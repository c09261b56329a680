import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/** Every file under `dir`, relative, with `/` separators. */
export function listFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory()
      ? listFiles(path).map((f) => `${name}/${f}`)
      : [relative(dir, path).replaceAll('\\', '/')];
  });
}

function decodeEntities(text: string): string {
  return text
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>');
}

export interface LinkReport {
  /** Links (and loaded resources) checked. */
  checked: number;
  /** Links whose target page or anchor does not exist: "page → href: why". */
  broken: string[];
  /** Resources a page would load from another origin (src=, <link href>). */
  external: string[];
}

/**
 * Checks every internal link of a built site: the target file exists, and an anchor exists on the
 * target page. `extraAnchors` gives anchors a page gets at run time (Redoc's, on the reference).
 */
export function checkLinks(
  siteDir: string,
  extraAnchors: Record<string, ReadonlySet<string>> = {},
): LinkReport {
  const files = listFiles(siteDir);
  const pages = files.filter((f) => f.endsWith('.html'));
  const ids = new Map<string, Set<string>>();
  const idsOf = (page: string): Set<string> => {
    let set = ids.get(page);
    if (!set) {
      const html = readFileSync(join(siteDir, page), 'utf8');
      set = new Set([...html.matchAll(/\sid="([^"]+)"/g)].map((m) => decodeEntities(m[1]!)));
      for (const anchor of extraAnchors[page] ?? []) set.add(anchor);
      ids.set(page, set);
    }
    return set;
  };
  const report: LinkReport = { checked: 0, broken: [], external: [] };
  for (const page of pages) {
    if (page === '404.html') continue;
    const html = readFileSync(join(siteDir, page), 'utf8');
    const base = new URL(page, 'http://site.test/');
    for (const [, tag, attribute, raw] of html.matchAll(
      /<(a|link|script|img|iframe|source)\b[^>]*?\s(href|src)="([^"]*)"/g,
    )) {
      const href = decodeEntities(raw!);
      if (href.startsWith('data:') || href.startsWith('mailto:') || href.startsWith('javascript:')) continue;
      const url = new URL(href, base);
      if (url.origin !== 'http://site.test') {
        if (tag !== 'a') report.external.push(`${page}: <${tag} ${attribute}="${href}">`);
        continue;
      }
      report.checked++;
      let target = decodeURIComponent(url.pathname).replace(/^\//, '');
      if (target === '' || target.endsWith('/')) target += 'index.html';
      if (!existsSync(join(siteDir, target))) {
        report.broken.push(`${page} → ${href}: no file ${target}`);
        continue;
      }
      const anchor = decodeURIComponent(url.hash.slice(1));
      if (anchor && target.endsWith('.html') && !idsOf(target).has(anchor)) {
        report.broken.push(`${page} → ${href}: ${target} has no id "${anchor}"`);
      }
    }
  }
  return report;
}
