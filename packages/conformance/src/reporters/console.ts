import { categoryOrder } from '../common/check-meta.js';
import {
  type AnyReport,
  attestationOf,
  type CheckResult,
  decisionLines,
  reportVerdict,
} from '../common/report.js';
import { terminalSafe } from '../common/terminal.js';
import type { TargetInfo } from '../server/run.js';

export interface ConsoleStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

export interface ConsoleReporterOptions {
  stream: ConsoleStream;
  /** Environment, for NO_COLOR. Default process.env. */
  env?: Record<string, string | undefined>;
}

const symbols: Record<CheckResult['status'], string> = {
  passed: '✓',
  failed: '✗',
  skipped: '-',
  errored: '!',
};
const colors: Record<CheckResult['status'], number> = { passed: 32, failed: 31, skipped: 33, errored: 35 };

/**
 * The live console output: a progress line by category (TTY only), each category's results once it is
 * complete, then the failures with their curl lines, then the summary. Colour only on a TTY without
 * NO_COLOR (https://no-color.org).
 */
export class ConsoleReporter {
  readonly #stream: ConsoleStream;
  readonly #tty: boolean;
  readonly #color: boolean;
  readonly #pending = new Map<string, number>();
  readonly #results = new Map<string, CheckResult[]>();
  readonly #order = new Map<string, number>();
  readonly #announced = new Set<string>();
  #statusShown = false;

  constructor(options: ConsoleReporterOptions) {
    const env = options.env ?? process.env;
    this.#stream = options.stream;
    this.#tty = options.stream.isTTY === true;
    const noColor = env.NO_COLOR !== undefined && env.NO_COLOR !== '';
    this.#color = this.#tty && !noColor && env.TERM !== 'dumb';
  }

  #paint(code: number, text: string): string {
    return this.#color ? `\x1b[${code}m${text}\x1b[0m` : text;
  }

  #clearStatus(): void {
    if (this.#statusShown) this.#stream.write('\r\x1b[2K');
    this.#statusShown = false;
  }

  #showStatus(): void {
    if (!this.#tty) return;
    const parts: string[] = [];
    for (const [category, pending] of this.#pending) {
      if (pending === 0) continue;
      const done = this.#results.get(category)?.length ?? 0;
      parts.push(`${category} ${done}/${done + pending}`);
    }
    if (parts.length === 0) return;
    this.#stream.write(`\r\x1b[2K${this.#paint(2, `running: ${parts.join(' · ')}`)}`);
    this.#statusShown = true;
  }

  /** The header: tool, target and profile. */
  start(info: TargetInfo, tool: { name: string; version: string }): void {
    this.begin(
      tool,
      [
        `target   ${info.kind}`,
        `  auth   ${info.authUrl}`,
        `  api    ${info.baseUrl}`,
        `  aud    ${info.audience}`,
        `profile  ${info.profile}`,
        ...(info.notes ?? []).map((note) => `note     ${note}`),
      ],
      info.checks,
    );
  }

  /** A header of any mode: the tool, then `lines`; `checks` are the ones whose results will come. */
  begin(
    tool: { name: string; version: string },
    lines: readonly string[],
    checks: ReadonlyArray<{ id: string; category: string }>,
  ): void {
    this.#stream.write(
      `${this.#paint(1, terminalSafe(`${tool.name} ${tool.version}`))}\n${lines.map((line) => `${terminalSafe(line)}\n`).join('')}\n`,
    );
    for (const [index, check] of checks.entries()) {
      this.#order.set(check.id, index);
      this.#pending.set(check.category, (this.#pending.get(check.category) ?? 0) + 1);
    }
    this.#showStatus();
  }

  #line(result: CheckResult): string {
    const symbol = this.#paint(colors[result.status], symbols[result.status]);
    const severity = result.severity === 'should' ? ' (should)' : '';
    const note = result.status === 'skipped' ? ` — ${result.details.split('\n')[0]}` : '';
    return `  ${symbol} ${result.id}${severity}  ${this.#paint(2, result.title)}${note}\n`;
  }

  /**
   * A check started. Off a terminal (a CI log), the first check of a category prints one line, so that
   * a long wait (the expiry check) shows what is running; on a terminal the status line does that.
   */
  started(check: { id: string; category: string }): void {
    if (this.#tty || this.#announced.has(check.category)) return;
    this.#announced.add(check.category);
    const total = (this.#pending.get(check.category) ?? 0) + (this.#results.get(check.category)?.length ?? 0);
    this.#stream.write(`… ${check.category}: ${total} check${total === 1 ? '' : 's'} running\n`);
  }

  /** One finished check; prints its category once the category is complete. */
  result(given: CheckResult): void {
    const result = safeResult(given);
    const list = this.#results.get(result.category) ?? [];
    list.push(result);
    this.#results.set(result.category, list);
    const pending = (this.#pending.get(result.category) ?? 1) - 1;
    this.#pending.set(result.category, pending);
    if (pending === 0) {
      this.#clearStatus();
      const passed = list.filter((item) => item.status === 'passed').length;
      this.#stream.write(`${this.#paint(1, result.category)} ${passed}/${list.length} passed\n`);
      list.sort((a, b) => (this.#order.get(a.id) ?? 0) - (this.#order.get(b.id) ?? 0));
      for (const item of list) this.#stream.write(this.#line(item));
    }
    this.#showStatus();
  }

  /** The failures (each with its details and curl line) and the summary. */
  finish(report: AnyReport): void {
    this.#clearStatus();
    const known = categoryOrder(report.mode);
    const order = (category: string) => known.indexOf(category);
    const checks = report.checks.map(safeResult);
    const bad = checks
      .filter((check) => check.status === 'failed' || check.status === 'errored')
      .sort((a, b) => order(a.category) - order(b.category));
    const notVerified = checks.filter((check) => check.status === 'skipped' && check.severity === 'must');
    if (notVerified.length > 0) {
      this.#stream.write(`\n${this.#paint(1, 'Not verified (must)')}\n`);
      for (const check of notVerified)
        this.#stream.write(`  - ${check.id}: ${check.details.split('\n')[0]}\n`);
    }
    if (report.mode === 'server' && report.writes.allowed)
      this.#stream.write(
        `\n--allow-writes: ${report.writes.mayHaveCreated.length === 0 ? 'no create request succeeded' : `these create requests succeeded and may have created data: ${terminalSafe(report.writes.mayHaveCreated.join('; '))}`}\n`,
      );
    if (bad.length > 0) {
      this.#stream.write(`\n${this.#paint(1, 'Failures')}\n`);
      for (const check of bad) {
        this.#stream.write(
          `\n${this.#paint(colors[check.status], symbols[check.status])} ${this.#paint(1, check.id)} [${check.severity}, ${check.reference}] ${check.title}\n`,
        );
        for (const line of check.details.split('\n')) this.#stream.write(`    ${line}\n`);
        if (check.fix) this.#stream.write(`    how to fix: ${check.fix}\n`);
      }
    }
    if (report.mode === 'client') {
      this.#stream.write(`\n${this.#paint(1, 'Decision')}\n`);
      for (const line of decisionLines(report)) this.#stream.write(`  ${terminalSafe(line)}\n`);
      const { provenance, integration } = report;
      if (integration?.name || integration?.version)
        this.#stream.write(
          `  integration: ${terminalSafe([integration.name, integration.version].filter(Boolean).join(' '))}\n`,
        );
      // The mark first, painted: a report not attested says so before anything else of its provenance.
      this.#stream.write(
        `  ${this.#paint(attestationOf(provenance).attested ? 32 : 33, `provenance: ${terminalSafe(attestationOf(provenance).mark)}`)}\n`,
      );
      this.#stream.write(
        `  session SHA-256 ${provenance.sessionSha256} (${provenance.source}${provenance.sessionFile ? `: ${terminalSafe(provenance.sessionFile)}` : ''}): ${provenance.note}\n`,
      );
    }
    const { passed, failed, skipped, errored } = report.summary;
    const verdict = reportVerdict(report);
    const code = verdict.code;
    this.#stream.write(
      `\n${report.checks.length} checks: ${passed} passed, ${failed} failed, ${skipped} not verified, ${errored} errored in ${(report.durationMs / 1000).toFixed(2)} s\n` +
        `${this.#paint(code === 0 ? 32 : 31, terminalSafe(verdict.text))} (exit ${code})\n`,
    );
  }
}

/** A result whose text fields are safe for a terminal (they may quote a hostile target or session). */
function safeResult(result: CheckResult): CheckResult {
  return {
    ...result,
    id: terminalSafe(result.id),
    title: terminalSafe(result.title),
    category: terminalSafe(result.category),
    reference: terminalSafe(result.reference),
    details: terminalSafe(result.details),
    ...(result.fix !== undefined && { fix: terminalSafe(result.fix) }),
  };
}
