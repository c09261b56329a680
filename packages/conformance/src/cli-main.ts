import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { checkIds } from './checks/index.js';
import { parseCliArgs, usageText } from './cli-args.js';
import type { ClientConformanceOptions } from './client/run-client.js';
import { clientMain } from './client-cli.js';
import { ConformanceError, exitCodeForError } from './errors.js';
import { exitCodeFor, type Report, runEnvironment } from './report.js';
import { ConsoleReporter, type ConsoleStream } from './reporters/console.js';
import { formatHtmlReport } from './reporters/html.js';
import { formatJsonReport } from './reporters/json.js';
import { formatJunitReport } from './reporters/junit.js';
import { type ConformanceOptions, runConformanceDetailed } from './run-conformance.js';
import { specSha256 } from './spec-responses.js';
import { tool } from './version.js';

export interface CliIo {
  stdout: ConsoleStream;
  stderr: ConsoleStream;
  env: Record<string, string | undefined>;
  /** Extra library options (tests pass the embedded mock's faults here). */
  overrides?: ConformanceOptions;
  /** Client mode: aborted on Ctrl-C (the CLI wires SIGINT/SIGTERM to it). */
  signal?: AbortSignal;
  /** Client mode: extra library options (tests send the journey's output to a pipe). */
  clientOverrides?: Partial<ClientConformanceOptions>;
}

const defaultIo = (): CliIo => ({ stdout: process.stdout, stderr: process.stderr, env: process.env });

/** Writes each report (its directory created when missing) and says where; ERR_REPORT when one fails. */
export async function writeReports(
  writes: ReadonlyArray<[string, string]>,
  io: Pick<CliIo, 'stdout'>,
): Promise<void> {
  for (const [path, text] of writes) {
    try {
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, text);
    } catch (cause) {
      const reason = cause instanceof Error ? cause.message : String(cause);
      throw new ConformanceError('ERR_REPORT', `could not write the report ${path}: ${reason}`, { cause });
    }
    io.stdout.write(`report written: ${path}\n`);
  }
}

async function writeStoppedReports(
  config: ReturnType<typeof parseCliArgs>,
  error: ConformanceError,
  startedAt: Date,
  io: Pick<CliIo, 'stdout'>,
): Promise<void> {
  const options = config.options;
  const report: Report = {
    schemaVersion: 3,
    tool: { name: tool.name, version: tool.version },
    mode: 'server',
    certify: options.certify === true,
    target: {
      authUrl: options.authUrl ?? '',
      baseUrl: options.baseUrl ?? '',
      audience: options.audience ?? options.baseUrl ?? '',
    },
    spec: { sha256: specSha256 },
    writes: { allowed: options.allowWrites === true, mayHaveCreated: [] },
    startedAt: startedAt.toISOString(),
    durationMs: Date.now() - startedAt.getTime(),
    environment: runEnvironment(),
    summary: { passed: 0, failed: 0, skipped: 0, errored: 0 },
    notVerified: [],
    stopped: { code: error.code, reason: error.message },
    checks: [],
  };
  const writes: Array<[string, string]> = [];
  if (config.reports.json) writes.push([config.reports.json, formatJsonReport(report)]);
  if (config.reports.junit) writes.push([config.reports.junit, formatJunitReport(report)]);
  if (config.reports.html)
    writes.push([
      config.reports.html,
      formatHtmlReport(report, {
        kind: options.baseUrl ? 'remote' : 'embedded mock',
        profile: 'not observed',
      }),
    ]);
  await writeReports(writes, io);
}

/** The `partner-conformance` command: returns the exit code of the contract (0/1/2/3). */
export async function main(argv: readonly string[], io: CliIo = defaultIo()): Promise<number> {
  const fail = (error: ConformanceError) => {
    io.stderr.write(`partner-conformance: ${error.message}\n`);
    return exitCodeForError(error);
  };
  if (argv[0] === 'client') return clientMain(argv.slice(1), io);
  try {
    const config = parseCliArgs(argv, io.env);
    if (config.help) {
      io.stdout.write(`${usageText}\nChecks: ${checkIds.join(', ')}\n`);
      return 0;
    }
    if (config.version) {
      io.stdout.write(`${tool.version}\n`);
      return 0;
    }
    const reporter = new ConsoleReporter({ stream: io.stdout, env: io.env });
    const startedAt = new Date();
    let run: Awaited<ReturnType<typeof runConformanceDetailed>>;
    try {
      run = await runConformanceDetailed({
        ...config.options,
        ...io.overrides,
        onTarget: (info) => reporter.start(info, tool),
        onCheckStart: (check) => reporter.started(check),
        onCheckResult: (result) => reporter.result(result),
      });
    } catch (error) {
      // The run stopped before any check (the preflight): the reports asked for still say why.
      if (error instanceof ConformanceError && error.code !== 'ERR_USAGE')
        await writeStoppedReports(config, error, startedAt, io).catch(() => undefined);
      throw error;
    }
    const { report, target } = run;
    reporter.finish(report);
    const writes: Array<[string, string]> = [];
    if (config.reports.json) writes.push([config.reports.json, formatJsonReport(report)]);
    if (config.reports.junit) writes.push([config.reports.junit, formatJunitReport(report)]);
    if (config.reports.html) writes.push([config.reports.html, formatHtmlReport(report, target)]);
    await writeReports(writes, io);
    return exitCodeFor(report.checks, { certify: report.certify });
  } catch (error) {
    if (error instanceof ConformanceError) return fail(error);
    // Anything else is a bug of the suite: one line, no stack trace, and not a pass.
    const message = error instanceof Error ? error.message : String(error);
    io.stderr.write(`partner-conformance: internal error: ${message}\n`);
    return 1;
  }
}
