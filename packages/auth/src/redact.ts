/**
 * Redaction helpers. Tokens are bearer credentials: anyone holding the string can call the API. We
 * show at most their last 6 characters, enough to tell two tokens apart in a log.
 */

/** `…abc123`: the last 6 characters of a token, never the whole of it. */
export function shortenToken(token: string): string {
  return token.length <= 12 ? '…' : `…${token.slice(-6)}`;
}

/** Replaces every occurrence of each secret in `text` with `[REDACTED]` (for server-provided text). */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length >= 4) out = out.split(secret).join('[REDACTED]');
  }
  return out;
}
