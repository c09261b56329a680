import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { clientChecks } from '../src/client/checks/index.js';
import { checks } from '../src/server/checks/index.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

/** The cells of the rows of a README table between two headings whose first cell matches `row`. */
const tableRows = (from: string, to: string, row: RegExp): string[][] =>
  readme
    .slice(readme.indexOf(from), readme.indexOf(to))
    .split('\n')
    .filter((line) => row.test(line))
    .map((line) =>
      line
        .split(/(?<!\\)\|/)
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );

/** The README row a check must have: id, category, severity, rule, title, citation, precondition, evidence. */
const rowOf = (check: (typeof checks)[number] | (typeof clientChecks)[number]): string[] =>
  [
    `\`${check.id}\``,
    check.category,
    check.severity,
    check.reference,
    check.title,
    check.citation,
    check.precondition,
    check.records,
  ].map((cell) => cell.replace(/\|/g, '\\|'));

describe('README', () => {
  it('lists every check with its category, severity, rule, title, cited sentence, precondition and evidence, in catalogue order', () => {
    expect(tableRows('## Checks', '## Client mode', /^\| `[a-z][a-z0-9-]*` \|/)).toEqual(checks.map(rowOf));
  });

  it('lists every client check the same way, in catalogue order', () => {
    expect(tableRows('### Client checks', '### Reference clients', /^\| `client-[a-z0-9-]*` \|/)).toEqual(
      clientChecks.map(rowOf),
    );
  });

  it("runs the command by its scoped package everywhere (an unscoped npx name could be anyone's)", () => {
    expect(readme).not.toMatch(/npx partner-/);
  });
});
