// A reviewer at the certification service's reviewer pages, through the forms they post (no browser):
// sign in with the credential `admin add-reviewer` printed, read a page's form for its CSRF token, post.
// The forms are the service's own test support (`reviewerForms`); this adds the guides' rule: every post
// a guide's reviewer makes is accepted (303).
import { reviewerForms } from '../../../../packages/certification-service/test/support/reviewer-forms.js';

export interface ReviewerSession {
  /** Reads the form on `page` and posts `fields` (with its CSRF token) to `action`; throws unless 303. */
  form(page: string, action: string, fields: Record<string, string>): Promise<void>;
}

/** Signs in at `serviceUrl` with a reviewer's credential; throws saying what the service answered. */
export async function reviewerSession(serviceUrl: string, credential: string): Promise<ReviewerSession> {
  const forms = await reviewerForms(serviceUrl, credential);
  return {
    async form(page, action, fields) {
      const answer = await forms.post(page, action, fields);
      if (answer.status !== 303)
        throw new Error(`${action} answered ${answer.status}: ${answer.text.replace(/<[^>]+>/g, ' ')}`);
    },
  };
}
