import { describe, expect, it } from 'vitest';
import { ChangelogError, changelogMarkdown, parseChangeset } from '../../src/site/changelog.js';

describe('changelog', () => {
  it('parses a changeset and groups the pending ones by package under "Unreleased"', () => {
    const a = parseChangeset(
      'a',
      '---\n"@partner-lending/sdk": minor\n"@partner-lending/auth": patch\n---\n\nNew `x`.\n\nMore <T>.\n',
    );
    const b = parseChangeset('b', "---\n'@partner-lending/sdk': patch\n---\nFix y.\n");
    expect(a.releases).toEqual({ '@partner-lending/sdk': 'minor', '@partner-lending/auth': 'patch' });
    const page = changelogMarkdown(
      [a, b],
      [{ name: '@partner-lending/spec', markdown: '# @partner-lending/spec\n\n## 0.1.0\n\n- First.\n' }],
    );
    expect(page).toContain('## Unreleased');
    expect(page.indexOf('### @partner-lending/auth')).toBeLessThan(page.indexOf('### @partner-lending/sdk'));
    expect(page).toContain('- **minor** — New `x`.\n\n  More &lt;T>.');
    expect(page).toContain('- **patch** — Fix y.');
    expect(page).toContain('## Released');
    expect(page).toContain('#### 0.1.0');
  });

  it('says so when nothing is pending, and refuses a changeset it cannot read', () => {
    expect(changelogMarkdown([], [])).toContain('Nothing yet.');
    expect(() => parseChangeset('x', 'no front matter')).toThrow(ChangelogError);
    expect(() => parseChangeset('x', '---\n"@partner-lending/sdk": huge\n---\nx')).toThrow(/cannot read/);
  });
});
