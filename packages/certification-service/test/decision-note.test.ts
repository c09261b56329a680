import { describe, expect, it } from 'vitest';
import { checkNote, noteRule } from '../src/production/decisions/note.js';

// A reviewer's note is signed into the decision and shown to reviewers and partners: nothing in it may
// hide, reorder or break the text a reader sees.
describe('a decision note', () => {
  it.each([
    ['a C0 control (ESC)', '\u001b', 'a control character'],
    ['DEL', '\u007f', 'a control character'],
    ['a C1 control (NEL)', '\u0085', 'a control character'],
    ['the last C1 control', '\u009f', 'a control character'],
    ['the line separator', '\u2028', 'a line or paragraph separator'],
    ['the paragraph separator', '\u2029', 'a line or paragraph separator'],
    ['a left-to-right embedding', '\u202a', 'a bidirectional control'],
    ['a right-to-left override', '\u202e', 'a bidirectional control'],
    ['a left-to-right isolate', '\u2066', 'a bidirectional control'],
    ['a pop directional isolate', '\u2069', 'a bidirectional control'],
    ['an unpaired surrogate', '\ud800', 'an unpaired surrogate'],
  ])('refuses %s, naming it and where it is', (_name, character, kind) => {
    const result = checkNote(`approved ${character}after review`);
    expect(result).toHaveProperty('problem');
    const { problem } = result as { problem: string };
    const code = character.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
    expect(problem).toContain(`${kind}`);
    expect(problem).toContain(`(U+${code}) at character 10`);
    expect(problem).toContain(noteRule);
  });

  it('keeps line breaks, tabs and any other text, right-to-left scripts and emoji included (negative control)', () => {
    const text = 'line one\n\tindented\nשלום عالم — ok 👍 (U+00A0:\u00a0)';
    expect(checkNote(`  ${text.replace(/\n/g, '\r\n')}  `)).toEqual({ note: text });
  });

  it('states the rule it applies', () => {
    for (const named of ['U+007F–U+009F', 'U+2028, U+2029', 'U+202A–U+202E, U+2066–U+2069'])
      expect(noteRule).toContain(named);
  });
});
