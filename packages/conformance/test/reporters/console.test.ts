import { describe, expect, it } from 'vitest';
import { ConsoleReporter } from '../../src/reporters/console.js';
import { sink } from '../helpers.js';
import { report, target } from './fixture.js';

const tool = { name: 'partner-conformance', version: '0.1.0' };

function render(isTTY: boolean, env: Record<string, string | undefined>) {
  const out = sink(isTTY);
  const reporter = new ConsoleReporter({ stream: out, env });
  reporter.start(target, tool);
  for (const result of report.checks) reporter.result(result);
  reporter.finish(report);
  return out.text();
}

describe('ConsoleReporter', () => {
  it('prints plain text on a non-TTY: categories, failures with curl lines, summary', () => {
    const text = render(false, {});
    expect(text).not.toContain('\x1b[');
    expect(text).toContain(
      'token-endpoint 0/1 passed\n  ✗ token-no-store  Token answers carry Cache-Control: no-store\n',
    );
    expect(text).toContain(
      '  - integrity-expired  An expired token is refused — not verified: the token lives 43200 s more\n',
    );
    expect(text).toContain(
      '\nFailures\n\n✗ token-no-store [must, RFC 6749 §5.1] Token answers carry Cache-Control: no-store\n    expected no-store, got <none> & "x"\n    reproduce: curl -i -X POST \'http://127.0.0.1:1/oauth/token\'\n',
    );
    expect(text).toContain(
      '\nNot verified (must)\n  - integrity-expired: not verified: the token lives 43200 s more\n',
    );
  });

  it('ends with the verdict line, naming the failed and the not-verified must checks', () => {
    expect(render(false, {})).toContain(
      '\n4 checks: 1 passed, 1 failed, 1 not verified, 1 errored in 1.23 s\nFAIL — 1 must check failed or errored: token-no-store; 1 must check not verified: integrity-expired (exit 1)\n',
    );
  });

  it('prints a category in catalogue order, whatever order its checks finish in', () => {
    const out = sink(false);
    const reporter = new ConsoleReporter({ stream: out, env: {} });
    const checks = [
      { ...report.checks[1]!, id: 'first' },
      { ...report.checks[1]!, id: 'second' },
    ];
    reporter.start(
      { ...target, checks: checks.map(({ id }) => ({ id, category: 'scope-intersection' })) },
      tool,
    );
    reporter.result(checks[1]!);
    expect(out.text()).not.toContain('scope-intersection 1/2');
    reporter.result(checks[0]!);
    expect(out.text()).toMatch(/scope-intersection 2\/2 passed\n {2}✓ first .*\n {2}✓ second /);
  });

  it('colours and shows live progress on a TTY, without colour under NO_COLOR', () => {
    const tty = render(true, {});
    expect(tty).toContain('\x1b[31m✗\x1b[0m');
    expect(tty).toContain('running: ');
    const noColor = render(true, { NO_COLOR: '1' });
    expect(noColor).not.toMatch(new RegExp(`${String.fromCharCode(27)}\\[\\d+m`));
    expect(noColor).toContain('running: ');
  });
});

describe('ConsoleReporter progress off a terminal', () => {
  it('prints one line when a category starts (a CI log shows what runs), none on a terminal', () => {
    for (const isTTY of [false, true]) {
      const out = sink(isTTY);
      const reporter = new ConsoleReporter({ stream: out, env: {} });
      reporter.start(target, tool);
      for (const result of report.checks) reporter.started(result);
      for (const result of report.checks) reporter.started(result);
      const lines = out
        .text()
        .split('\n')
        .filter((line) => line.startsWith('… '));
      if (isTTY) expect(lines).toEqual([]);
      else
        expect(lines).toEqual(
          [...new Set(report.checks.map((check) => check.category))].map((category) => {
            const n = report.checks.filter((check) => check.category === category).length;
            return `… ${category}: ${n} check${n === 1 ? '' : 's'} running`;
          }),
        );
    }
  });
});
