// A reviewer at the certification service's reviewer pages, through the forms they post (no browser):
// sign in with the credential `admin add-reviewer` printed, read a page's form for its CSRF token, post.

export interface ReviewerSession {
  /** Reads the form on `page` and posts `fields` (with its CSRF token) to `action`; throws unless 303. */
  form(page: string, action: string, fields: Record<string, string>): Promise<void>;
}

/** Signs in at `serviceUrl` with a reviewer's credential; throws saying what the service answered. */
export async function reviewerSession(serviceUrl: string, credential: string): Promise<ReviewerSession> {
  const signin = await fetch(`${serviceUrl}/signin`, {
    method: 'POST',
    redirect: 'manual',
    headers: { origin: serviceUrl, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ credential }),
  });
  if (signin.status !== 303) throw new Error(`sign-in answered ${signin.status}, not 303`);
  const cookie = (signin.headers.get('set-cookie') ?? '').split(';')[0]!;
  return {
    async form(page, action, fields) {
      const html = await (await fetch(`${serviceUrl}${page}`, { headers: { cookie } })).text();
      const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1];
      if (!csrf) throw new Error(`no form on ${page}: ${html.replace(/<[^>]+>/g, ' ').slice(0, 600)}`);
      const answer = await fetch(`${serviceUrl}${action}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, origin: serviceUrl, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrf, ...fields }),
      });
      if (answer.status !== 303)
        throw new Error(
          `${action} answered ${answer.status}: ${(await answer.text()).replace(/<[^>]+>/g, ' ')}`,
        );
    },
  };
}
