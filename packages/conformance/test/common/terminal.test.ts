import { describe, expect, it } from 'vitest';
import { terminalSafe } from '../../src/common/terminal.js';

describe('terminalSafe', () => {
  it('shows every invisible or reordering character as text', () => {
    expect(terminalSafe('a\u001b[2Jb\rc\u0085d\u009fe')).toBe('a\\x1b[2Jb\\x0dc\\x85d\\x9fe');
    expect(terminalSafe('x\u2028y\u2029z')).toBe('x\\u{2028}y\\u{2029}z');
    expect(terminalSafe('\u202eevil\u202c \u2066iso\u2069 \u200f\u061c')).toBe(
      '\\u{202e}evil\\u{202c} \\u{2066}iso\\u{2069} \\u{200f}\\u{61c}',
    );
  });

  it('keeps line feeds, tabs and other text as they are (negative control)', () => {
    const text = 'note:\n\tapproved — שלום 👍';
    expect(terminalSafe(text)).toBe(text);
  });
});
