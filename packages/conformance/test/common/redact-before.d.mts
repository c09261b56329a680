/** Ways to break the reference on purpose (the equivalence test's negative controls). */
export interface Mutation {
  /** Replace the secrets shortest first instead of longest first. */
  shortestFirst?: boolean;
  /** Sort the secrets on the first `redact` only (a cache never invalidated by a later registration). */
  staleOrder?: boolean;
  /** Replace the registered tokens newest first. */
  tokensNewestFirst?: boolean;
  /** Run a per-character pattern only when the text holds a '%'. */
  patternsOnlyWithPercent?: boolean;
}

/** `Redactor` as it was before it skipped steps (see redact-before.mjs). */
export class RedactorBefore {
  constructor(mutation?: Mutation);
  addSecret(value: string, placeholder: string): void;
  addBasicCredentials(id: string, secret: string, placeholder: string): void;
  addToken(value: string): void;
  redact(text: string): string;
}
