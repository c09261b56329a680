// `Redactor` (src/common/redact.ts) as it was before its steps were skipped when a text cannot match:
// the frozen reference its output is held to (test/common/redact-equivalence.test.ts) and measured
// against (bench/redact.bench.mjs). Keep it as it is. `mutation` breaks it on purpose, for the test's
// negative controls; without one it is the implementation before.

const shortenBefore = (token) => `…${token.slice(-6)}`;
const jwtPatternBefore = /eyJ[A-Za-z0-9_-]{4,}(?:\.[A-Za-z0-9_-]*){1,2}/g;

export class RedactorBefore {
  #secrets = new Map();
  #tokens = new Set();
  #patterns = [];
  #mutation;
  #sorted;

  constructor(mutation = {}) {
    this.#mutation = mutation;
  }

  addSecret(value, placeholder) {
    if (value.length < 4) return;
    this.#secrets.set(value, placeholder);
    this.#secrets.set(encodeURIComponent(value), placeholder);
    this.#secrets.set(new URLSearchParams({ v: value }).toString().slice(2), placeholder);
    const pattern = [...value]
      .map((char) => {
        const bytes = [...new TextEncoder().encode(char)]
          .map((byte) => `%${byte.toString(16).padStart(2, '0')}`)
          .join('');
        return `(?:${char.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}|${bytes.replace(/%([0-9a-f])([0-9a-f])/g, (_, a, b) => `%[${a}${a.toUpperCase()}][${b}${b.toUpperCase()}]`)}${char === ' ' ? '|\\+' : ''})`;
      })
      .join('');
    this.#patterns.push([new RegExp(pattern, 'g'), placeholder]);
  }

  addBasicCredentials(id, secret, placeholder) {
    const encodings = new Set([
      `${id}:${secret}`,
      `${new URLSearchParams({ v: id }).toString().slice(2)}:${new URLSearchParams({ v: secret }).toString().slice(2)}`,
      `${encodeURIComponent(id)}:${encodeURIComponent(secret)}`,
    ]);
    for (const pair of encodings) {
      const base64 = Buffer.from(pair, 'utf8').toString('base64');
      for (const form of [base64, base64.replace(/=+$/, ''), Buffer.from(pair, 'utf8').toString('base64url')])
        if (form.length >= 8) this.#secrets.set(form, placeholder);
    }
  }

  addToken(value) {
    if (value.length >= 8) this.#tokens.add(value);
  }

  redact(text) {
    const m = this.#mutation;
    let out = text;
    const sorted = [...this.#secrets].sort((a, b) =>
      m.shortestFirst ? a[0].length - b[0].length : b[0].length - a[0].length,
    );
    if (m.staleOrder) this.#sorted ??= sorted;
    for (const [value, placeholder] of m.staleOrder ? this.#sorted : sorted)
      out = out.split(value).join(placeholder);
    for (const [pattern, placeholder] of this.#patterns)
      if (!m.patternsOnlyWithPercent || out.includes('%')) out = out.replace(pattern, placeholder);
    const tokens = m.tokensNewestFirst ? [...this.#tokens].reverse() : this.#tokens;
    for (const token of tokens) out = out.split(token).join(shortenBefore(token));
    return out.replace(jwtPatternBefore, (match) => shortenBefore(match));
  }
}
