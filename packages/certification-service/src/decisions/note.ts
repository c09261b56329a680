/** The longest note a decision (approve, reject, revoke) takes, in characters. */
export const noteMaxLength = 2000;

/** The rule, as /openapi.json and the refusals state it. */
export const noteRule = `1 to ${noteMaxLength} characters of text; line breaks and tabs are kept (and shown as text), any other control character (U+0000–U+001F, U+007F) or an unpaired surrogate is refused`;

const refused =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the pattern finds control characters to refuse them
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * A reviewer's note, trimmed (line breaks as LF), or what is wrong with it (what happened, what is expected, what to do).
 * Notes are recorded, signed into the decision and shown in the UI, always escaped.
 */
export function checkNote(raw: unknown): { note: string } | { problem: string } {
  // A form sends a textarea's line breaks as CRLF: kept as LF.
  const note = typeof raw === 'string' ? raw.replace(/\r\n?/g, '\n').trim() : '';
  if (note === '') return { problem: `The note is empty: write why (${noteRule}).` };
  if (note.length > noteMaxLength)
    return {
      problem: `The note has ${note.length} characters: a note is ${noteRule}. Shorten it and send it again.`,
    };
  const found = refused.exec(note);
  if (found) {
    const code = found[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
    return {
      problem: `The note has a control character (U+${code}) at character ${found.index + 1}: a note is ${noteRule}. Remove it (a paste from a terminal often brings one) and send it again.`,
    };
  }
  return { note };
}
