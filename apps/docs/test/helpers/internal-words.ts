/**
 * Words of our own workshop that no reader should meet: the name we give the vendor's documentation
 * internally, our design notes, and the folder they live in outside the repository.
 */
export const internalWords: ReadonlyArray<{ word: string; pattern: RegExp }> = [
  { word: 'seed', pattern: /seed/i },
  { word: 'the source', pattern: /the\s+source\b/i },
  { word: 'DESIGN.md', pattern: /DESIGN\.md/i },
  { word: 'shared/', pattern: /\bshared\//i },
];

export interface WordHit {
  where: string;
  line: number;
  word: string;
  excerpt: string;
}

/** Every internal word of `text`, with its line and a short excerpt around it. */
export function findInternalWords(text: string, where: string): WordHit[] {
  const hits: WordHit[] = [];
  text.split('\n').forEach((line, index) => {
    for (const { word, pattern } of internalWords) {
      const global = new RegExp(pattern.source, `${pattern.flags}g`);
      for (const match of line.matchAll(global)) {
        const start = Math.max(0, (match.index ?? 0) - 50);
        const excerpt = line.slice(start, (match.index ?? 0) + match[0].length + 50).trim();
        hits.push({ where, line: index + 1, word, excerpt });
      }
    }
  });
  return hits;
}

export function formatHits(hits: readonly WordHit[]): string {
  return hits.map((h) => `${h.where}:${h.line}: "${h.word}" in …${h.excerpt}…`).join('\n');
}
