/** The longest note a decision (approve, reject, revoke) takes, in characters. */
export const noteMaxLength = 2000;

/** The rule, as /openapi.json and the refusals state it. */
export const noteRule = `1 to ${noteMaxLength} characters of text; line breaks and tabs are kept (and shown as text), any other control character (U+0000–U+001F, U+007F–U+009F), a line or paragraph separator (U+2028, U+2029), a bidirectional override or isolate (U+202A–U+202E, U+2066–U+2069) or an unpaired surrogate is refused`;

/**
 * What a note may not hold: Unicode's control characters but LF and TAB (C0, DEL and C1 — U+0085
 * breaks a line on some terminals), the line and paragraph separators (a line break that escapes
 * line-based readers), the bidirectional embeddings, overrides and isolates (they reorder what a
 * reviewer reads: "Trojan Source"), and unpaired surrogates (not text).
 */
const refused =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the pattern finds control characters to refuse them
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** What kind of character a refused one is, for the message. */
function kindOf(code: number): string {
  if (code === 0x2028 || code === 0x2029) return 'a line or paragraph separator';
  if ((code >= 0x202a && code <= 0x202e) || (code >= 0x2066 && code <= 0x2069))
    return 'a bidirectional control (it reorders the text shown)';
  if (code >= 0xd800 && code <= 0xdfff) return 'an unpaired surrogate';
  return 'a control character';
}

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
    const point = found[0].codePointAt(0)!;
    const code = point.toString(16).toUpperCase().padStart(4, '0');
    return {
      problem: `The note has ${kindOf(point)} (U+${code}) at character ${found.index + 1}: a note is ${noteRule}. Remove it (a paste from a terminal or a word processor often brings one) and send it again.`,
    };
  }
  return { note };
}
