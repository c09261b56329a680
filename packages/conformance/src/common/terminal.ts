/**
 * Text from a session, a report or a target, made safe for a terminal: control characters (escape
 * sequences that move the cursor, erase lines or write the clipboard with OSC 52, a carriage return that
 * overwrites a line, C1 controls), the line and paragraph separators (U+2028, U+2029) and bidirectional
 * overrides become visible `\xNN` / `\u{NNNN}` text.
 * Line feeds and tabs stay.
 */
export function terminalSafe(text: string): string {
  return text.replace(
    // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
    /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g,
    (char) => {
      const code = char.codePointAt(0)!;
      return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u{${code.toString(16)}}`;
    },
  );
}
