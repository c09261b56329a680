import type { Env, Hono } from 'hono';

// The reviewer pages live under one address scheme, /ui/…: /ui/partners, /ui/partners/{id} (and its
// /production page), /ui/runs/{id}, /ui/webhooks, /ui/audit. The addresses the pages had before, and the
// bare roots, answer GET and HEAD with a permanent redirect (308) to their page, the query kept, so a
// bookmark or a link in an old e-mail still lands; other methods on them are not pages (404).

/** Each old address (a Hono path) and the page it redirects to, built from its parameters. */
export const uiRedirects: ReadonlyArray<{ from: string; to: (params: Record<string, string>) => string }> = [
  { from: '/', to: () => '/ui/partners' },
  { from: '/ui', to: () => '/ui/partners' },
  { from: '/partners', to: () => '/ui/partners' },
  { from: '/partners/:id', to: ({ id }) => `/ui/partners/${encodeURIComponent(id!)}` },
  { from: '/partners/:id/production', to: ({ id }) => `/ui/partners/${encodeURIComponent(id!)}/production` },
  { from: '/audit', to: () => '/ui/audit' },
  { from: '/webhooks', to: () => '/ui/webhooks' },
  { from: '/runs/:id', to: ({ id }) => `/ui/runs/${encodeURIComponent(id!)}` },
];

/** Mounts the redirects (GET, and HEAD through it); before the sign-in check, as they reveal nothing. */
export function mountUiRedirects<E extends Env>(app: Hono<E>): void {
  for (const { from, to } of uiRedirects)
    app.get(from, (c) => {
      const query = new URL(c.req.url).search;
      return c.redirect(`${to(c.req.param() as Record<string, string>)}${query}`, 308);
    });
}
