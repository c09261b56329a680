import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { clientChecks } from '../src/client/checks/index.js';
import { checks } from '../src/server/checks/index.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('README', () => {
  it('lists every check with its category, severity, rule, title, cited sentence, precondition and evidence, in catalogue order', () => {
    const section = readme.slice(readme.indexOf('## Checks'), readme.indexOf('## Client mode'));
    const rows = section
      .split('\n')
      .filter((line) => /^\| `[a-z][a-z0-9-]*` \|/.test(line))
      .map((line) =>
        line
          .split('|')
          .slice(1, -1)
          .map((cell) => cell.trim()),
      );
    expect(rows).toEqual(
      checks.map((check) =>
        [
          `\`${check.id}\``,
          check.category,
          check.severity,
          check.reference,
          check.title,
          check.citation,
          check.precondition,
          check.records,
        ].map((cell) => cell.replace(/\|/g, '\\|')),
      ),
    );
  });

  it('lists every client check the same way, in catalogue order', () => {
    const section = readme.slice(
      readme.indexOf('### Client checks'),
      readme.indexOf('### Reference clients'),
    );
    const rows = section
      .split('\n')
      .filter((line) => /^\| `client-[a-z0-9-]*` \|/.test(line))
      .map((line) =>
        line
          .split(/(?<!\\)\|/)
          .slice(1, -1)
          .map((cell) => cell.trim()),
      );
    expect(rows).toEqual(
      clientChecks.map((check) =>
        [
          `\`${check.id}\``,
          check.category,
          check.severity,
          check.reference,
          check.title,
          check.citation,
          check.precondition,
          check.records,
        ].map((cell) => cell.replace(/\|/g, '\\|')),
      ),
    );
  });

  it("runs the command by its scoped package everywhere (an unscoped npx name could be anyone's)", () => {
    expect(readme).not.toMatch(/npx partner-/);
  });
});
