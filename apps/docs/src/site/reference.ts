import { type Guide, sectionAt } from './guides.js';

/**
 * Redoc's standalone bundle, made fit to serve from the site. The bundle loads no font and no script
 * from elsewhere; one thing in it does reach out: the sidebar footer's Redocly logo, an <img> on
 * cdn.redoc.ly. It is rewritten to an inline empty SVG. Each rewrite must match exactly once, so a
 * Redoc upgrade that moves them fails the build instead of silently loading from a CDN again.
 */
export const redocRewrites: ReadonlyArray<{ find: string; replace: string; why: string }> = [
  {
    find: '"https://cdn.redoc.ly/redoc/logo-mini.svg"',
    replace: `"data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='0' height='0'/%3E"`,
    why: 'the sidebar footer logo is fetched from cdn.redoc.ly',
  },
  {
    find: '//# sourceMappingURL=redoc.standalone.js.map',
    replace: '',
    why: 'the 4 MB source map is not shipped; without this line developer tools would request it and get a 404',
  },
];

export class ReferenceBuildError extends Error {
  override name = 'ReferenceBuildError';
}

export function vendorRedocBundle(source: string): string {
  let result = source;
  for (const { find, replace, why } of redocRewrites) {
    const count = result.split(find).length - 1;
    if (count !== 1) {
      throw new ReferenceBuildError(
        `redoc.standalone.js contains ${JSON.stringify(find)} ${count} times, expected once (${why}); check the rewrite in apps/docs/src/site/reference.ts against the installed redoc version.`,
      );
    }
    result = result.replace(find, () => replace);
  }
  return result;
}

// ---------------------------------------------------------------------------------------------------
// The spec, as far as this module reads it.

interface Schema {
  type?: string | string[];
  description?: string;
  enum?: unknown[];
  const?: unknown;
  format?: string;
  minimum?: number;
  required?: string[];
  properties?: Record<string, Schema>;
  $ref?: string;
  oneOf?: Schema[];
}
interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  description?: string;
  schema?: Schema;
  $ref?: string;
}
interface MediaType {
  schema?: Schema;
}
interface Response {
  description?: string;
  content?: Record<string, MediaType>;
  headers?: Record<string, { description?: string; $ref?: string }>;
  $ref?: string;
}
export interface Operation {
  operationId?: string;
  tags?: string[];
  summary?: string;
  description?: string;
  security?: Array<Record<string, string[]>>;
  parameters?: Parameter[];
  requestBody?: { description?: string; content?: Record<string, MediaType>; $ref?: string };
  responses?: Record<string, Response>;
  servers?: Array<{ url: string }>;
}
export interface Spec {
  info?: { title?: string; description?: string };
  servers?: Array<{ url: string; variables?: Record<string, { default?: string }> }>;
  tags?: Array<{ name: string; description?: string }>;
  paths?: Record<
    string,
    Record<string, unknown> & { parameters?: Parameter[]; servers?: Array<{ url: string }> }
  >;
  components?: Record<string, Record<string, unknown>>;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;

export interface OperationEntry {
  method: string;
  path: string;
  server: string;
  operation: Operation;
  pathParameters: Parameter[];
}

export function operationsOf(spec: Spec): OperationEntry[] {
  const out: OperationEntry[] = [];
  for (const [path, item] of Object.entries(spec.paths ?? {})) {
    for (const method of METHODS) {
      const operation = item[method] as Operation | undefined;
      if (!operation) continue;
      const server = operation.servers?.[0]?.url ?? item.servers?.[0]?.url ?? spec.servers?.[0]?.url ?? '';
      out.push({
        method: method.toUpperCase(),
        path,
        server,
        operation,
        pathParameters: item.parameters ?? [],
      });
    }
  }
  return out;
}

/** Redoc's anchor of a tag: `tag/<name with spaces as ->`. */
export function tagAnchor(tag: string): string {
  return `tag/${tag.replace(/\s+/g, '-')}`;
}

/** Redoc's anchor of an operation. */
export function operationAnchor(entry: OperationEntry): string {
  const tag = entry.operation.tags?.[0];
  const id = entry.operation.operationId ?? '';
  return tag ? `${tagAnchor(tag)}/operation/${id}` : `operation/${id}`;
}

/** Every anchor Redoc renders for the spec's tags and operations. */
export function referenceAnchors(spec: Spec): Set<string> {
  const anchors = new Set<string>();
  for (const tag of spec.tags ?? []) anchors.add(tagAnchor(tag.name));
  for (const entry of operationsOf(spec)) {
    const id = entry.operation.operationId;
    if (!id) continue;
    anchors.add(`operation/${id}`);
    for (const tag of entry.operation.tags ?? []) {
      anchors.add(tagAnchor(tag));
      anchors.add(`${tagAnchor(tag)}/operation/${id}`);
    }
  }
  return anchors;
}

/** A page's link to the reference, and the section of the page it is in. */
export interface ReferenceLink {
  /** The page's URL path, e.g. `/authentication.html`. */
  page: string;
  pageTitle: string;
  /** The section's id on that page (empty for the top of the page). */
  section: string;
  sectionTitle: string;
  /** The Redoc anchor linked to, e.g. `tag/Loans/operation/listLoans`. */
  anchor: string;
  file: string;
  line: number;
}

const REFERENCE_LINK = /\]\((?:\.\/|\/)?reference(?:\.html|\.md)?#([^)\s]+)\)/g;

/**
 * Every link from a page to an anchor of the reference, with the page's section it sits in: the
 * reference links back to each one ("Explained in …"), so the two stay linked both ways by
 * construction. A link to an anchor the reference does not have is an error.
 */
export function referenceLinks(
  pages: ReadonlyArray<Pick<Guide, 'file' | 'markdown' | 'title'> & { url: string }>,
  spec: Spec,
): ReferenceLink[] {
  const anchors = referenceAnchors(spec);
  const links: ReferenceLink[] = [];
  for (const page of pages) {
    page.markdown.split('\n').forEach((text, index) => {
      for (const match of text.matchAll(REFERENCE_LINK)) {
        const anchor = decodeURIComponent(match[1]!);
        if (!anchors.has(anchor)) {
          throw new ReferenceBuildError(
            `${page.file}:${index + 1}: link to reference#${anchor}, which the reference does not have (it has ${[...anchors].filter((a) => a.includes('/operation/')).join(', ')}).`,
          );
        }
        const section = sectionAt(page.markdown, index + 1);
        const top = section === undefined || section.level === 1;
        links.push({
          page: page.url,
          pageTitle: page.title,
          section: top ? '' : section.id,
          sectionTitle: top ? '' : section.text,
          anchor,
          file: page.file,
          line: index + 1,
        });
      }
    });
  }
  return links;
}

/** The pages that explain an operation (links to it, or to its tag), one per section. */
export function explainedIn(entry: OperationEntry, links: readonly ReferenceLink[]): ReferenceLink[] {
  const own = new Set([operationAnchor(entry), `operation/${entry.operation.operationId}`]);
  const seen = new Set<string>();
  return links.filter((link) => {
    const key = `${link.page}#${link.section}`;
    if (!own.has(link.anchor) || seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function linkText(link: ReferenceLink): string {
  return link.sectionTitle ? `${link.pageTitle} › ${link.sectionTitle}` : link.pageTitle;
}

function linkHref(link: ReferenceLink, base: string): string {
  return `${base}${link.page.replace(/^\//, '')}${link.section ? `#${link.section}` : ''}`;
}

const BARE_VARIABLE = /^\{([^{}]+)\}$/;

/**
 * The copy of the spec that Redoc displays:
 * - a server URL that is a bare variable ("{base_url}") is replaced by the variable's documented
 *   default, because Redoc resolves a URL without a scheme relative to the page and would print
 *   "http://docs-host/{base_url}/v3/…";
 * - each operation's description ends with links to the guide sections that explain it.
 * The download link serves the spec unmodified.
 */
export function referenceSpec<T extends Spec>(spec: T, links: readonly ReferenceLink[], base = '/'): T {
  const copy = structuredClone(spec);
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item);
      return;
    }
    if (typeof node !== 'object' || node === null) return;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'servers' && Array.isArray(value)) {
        for (const server of value as Array<{
          url: string;
          variables?: Record<string, { default?: string }>;
        }>) {
          const name = BARE_VARIABLE.exec(server.url)?.[1];
          const fallback = name === undefined ? undefined : server.variables?.[name]?.default;
          if (fallback !== undefined) server.url = fallback;
        }
      }
      visit(value);
    }
  };
  visit(copy);
  for (const entry of operationsOf(copy)) {
    const explained = explainedIn(entry, links);
    if (explained.length === 0) continue;
    const list = explained.map((link) => `[${linkText(link)}](${linkHref(link, base)})`).join(' · ');
    entry.operation.description = `${(entry.operation.description ?? '').trimEnd()}\n\n**Explained in:** ${list}\n`;
  }
  return copy;
}

// ---------------------------------------------------------------------------------------------------
// The reference as Markdown pages (one per tag), for the site's search and for readers without
// JavaScript. Redoc stays the full reference; these pages say the same things in plain text.

function resolve<T>(spec: Spec, node: T & { $ref?: string }): T {
  let current: (T & { $ref?: string }) | undefined = node;
  for (let i = 0; current?.$ref && i < 10; i++) {
    const parts = current.$ref.replace(/^#\//, '').split('/');
    let target: unknown = spec;
    for (const part of parts) target = (target as Record<string, unknown>)?.[part];
    current = target as T & { $ref?: string };
  }
  return (current ?? node) as T;
}

/** Markdown text that Vue's template compiler takes as text: `<` and `{{` escaped outside code spans. */
export function safeMarkdown(text: string): string {
  return text
    .split(/(`[^`]*`)/)
    .map((part, i) => (i % 2 === 1 ? part : part.replace(/</g, '&lt;').replace(/\{\{/g, '&#123;&#123;')))
    .join('');
}

function typeOf(schema: Schema | undefined): string {
  if (!schema) return '';
  if (schema.const !== undefined) return `\`${JSON.stringify(schema.const)}\``;
  const type = Array.isArray(schema.type) ? schema.type.join(' | ') : (schema.type ?? 'any');
  return schema.format ? `${type} (${schema.format})` : type;
}

function oneLine(text: string | undefined): string {
  return safeMarkdown((text ?? '').replace(/\s*\n\s*/g, ' ').trim()).replace(/\|/g, '\\|');
}

export interface ReferencePage {
  /** File name inside the generated folder, e.g. `reference/loans.md`. */
  file: string;
  title: string;
  markdown: string;
}

export function tagSlug(tag: string): string {
  return tag.toLowerCase().replace(/[^a-z0-9]+/g, '-');
}

/** One Markdown page per tag: each operation's method, path, scope, text, parameters and responses. */
export function referencePages(spec: Spec, links: readonly ReferenceLink[], base = '/'): ReferencePage[] {
  const entries = operationsOf(spec);
  const schemes = Object.entries(
    (spec.components?.securitySchemes ?? {}) as Record<string, { description?: string }>,
  );
  const overview: ReferencePage = {
    file: 'reference/overview.md',
    title: 'Overview',
    markdown: `${[
      '---',
      'editLink: false',
      '---',
      '',
      `# ${spec.info?.title ?? 'API'}: overview`,
      '',
      safeMarkdown((spec.info?.description ?? '').trim()),
      '',
      ...schemes.flatMap(([name, scheme]) => [
        `## Security scheme \`${name}\` {#${name}}`,
        '',
        safeMarkdown((scheme.description ?? '').trim()),
        '',
      ]),
      '## Operations',
      '',
      ...entries.map((entry) => {
        const tag = entry.operation.tags?.[0] ?? '';
        return `- [${safeMarkdown(entry.operation.summary ?? '')}](./${tagSlug(tag)}.md#${entry.operation.operationId}) — \`${entry.method} ${entry.path}\``;
      }),
      '',
    ].join('\n')}\n`,
  };
  const tagPages = (spec.tags ?? []).map((tag) => {
    const lines: string[] = [
      '---',
      'editLink: false',
      '---',
      '',
      `# ${tag.name}`,
      '',
      `${safeMarkdown(tag.description ?? '')} This page is the reference's text, for search and quick reading; the [interactive reference](${base}reference.html#${tagAnchor(tag.name)}) shows the schemas and examples.`,
      '',
    ];
    for (const entry of entries.filter((e) => e.operation.tags?.includes(tag.name))) {
      const op = entry.operation;
      const id = op.operationId ?? '';
      const scopes = (op.security ?? []).flatMap((req) => Object.values(req).flat());
      lines.push(`## ${safeMarkdown(op.summary ?? id)} {#${id}}`, '');
      lines.push(
        `\`${entry.method} ${entry.server}${entry.path}\` · operation \`${id}\` · ${scopes.length > 0 ? `scope ${scopes.map((s) => `\`${s}\``).join(', ')}` : 'no token (it is how a token is obtained)'} · [in the interactive reference](${base}reference.html#${operationAnchor(entry)})`,
        '',
      );
      lines.push(safeMarkdown((op.description ?? '').trim()), '');
      const explained = explainedIn(entry, links);
      if (explained.length > 0) {
        lines.push(
          `**Explained in:** ${explained.map((link) => `[${linkText(link)}](${linkHref(link, base)})`).join(' · ')}`,
          '',
        );
      }
      const parameters = [...entry.pathParameters, ...(op.parameters ?? [])].map((p) =>
        resolve<Parameter>(spec, p),
      );
      if (parameters.length > 0) {
        lines.push(
          '**Parameters**',
          '',
          '| name | in | type | required | description |',
          '|---|---|---|---|---|',
        );
        for (const p of parameters) {
          lines.push(
            `| \`${p.name}\` | ${p.in} | ${typeOf(p.schema)} | ${p.required ? 'yes' : 'no'} | ${oneLine(p.description)} |`,
          );
        }
        lines.push('');
      }
      if (op.requestBody) {
        const body = resolve(spec, op.requestBody);
        for (const [mediaType, media] of Object.entries(body.content ?? {})) {
          const schema = media.schema ? resolve<Schema>(spec, media.schema) : undefined;
          lines.push(
            `**Request body** (\`${mediaType}\`): ${oneLine(schema?.description ?? body.description)}`,
            '',
          );
          if (schema?.properties) {
            lines.push('| field | type | required | description |', '|---|---|---|---|');
            for (const [name, prop] of Object.entries(schema.properties)) {
              lines.push(
                `| \`${name}\` | ${typeOf(prop)} | ${schema.required?.includes(name) ? 'yes' : 'no'} | ${oneLine(prop.description)} |`,
              );
            }
            lines.push('');
          }
        }
      }
      lines.push('**Responses**', '');
      for (const [status, raw] of Object.entries(op.responses ?? {})) {
        const response = resolve<Response>(spec, raw);
        const schema = Object.values(response.content ?? {})[0]?.schema;
        const resolved = schema ? resolve<Schema>(spec, schema) : undefined;
        const codes = resolved?.properties?.error?.enum;
        const headers = Object.entries(response.headers ?? {}).map(([name]) => `\`${name}\``);
        lines.push(
          `- **${status}** — ${oneLine(response.description)}${codes ? ` \`error\` is one of ${codes.map((c) => `\`${String(c)}\``).join(', ')}.` : ''}${headers.length > 0 ? ` Headers: ${headers.join(', ')}.` : ''}`,
        );
      }
      lines.push('');
    }
    return { file: `reference/${tagSlug(tag.name)}.md`, title: tag.name, markdown: `${lines.join('\n')}\n` };
  });
  return [overview, ...tagPages];
}
