/**
 * A reviewer's session in the reviewer pages through the forms they post (sign-in, then any page's form
 * with its CSRF token), for tests that need a decision without a browser. The pages themselves are
 * tested in Chromium (reviewer-ui, production-e2e, production-ui).
 */
export async function reviewerForms(url: string, credential: string) {
  const signin = await fetch(`${url}/signin`, {
    method: 'POST',
    redirect: 'manual',
    headers: { origin: url, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ credential }),
  });
  if (signin.status !== 303) throw new Error(`sign-in answered ${signin.status}`);
  const cookie = (signin.headers.get('set-cookie') ?? '').split(';')[0]!;
  return {
    /** GETs `page`, then POSTs its form to `action` with `fields` and the page's CSRF token. */
    async post(
      page: string,
      action: string,
      fields: Record<string, string>,
      headers: Record<string, string> = {},
    ) {
      const html = await (await fetch(`${url}${page}`, { headers: { cookie } })).text();
      const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1];
      if (!csrf) throw new Error(`no form on ${page}: ${html.replace(/<[^>]+>/g, ' ').slice(0, 600)}`);
      const answer = await fetch(`${url}${action}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { ...headers, cookie, origin: url, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrf, ...fields }),
      });
      return {
        status: answer.status,
        contentType: answer.headers.get('content-type'),
        text: await answer.text(),
      };
    },
    /** A page as the signed-in reviewer sees it. */
    async get(page: string) {
      const answer = await fetch(`${url}${page}`, { headers: { cookie }, redirect: 'manual' });
      return { status: answer.status, text: await answer.text() };
    },
  };
}
