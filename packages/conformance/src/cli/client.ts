import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { clientCheckIds, clientChecks } from '../client/checks/index.js';
import { judgeSession } from '../client/judge.js';
import { defaultTimeoutSeconds, runClientConformance } from '../client/run.js';
import { type ClientSession, formatSession, type ScenarioName } from '../client/session.js';
import { readSessionFile } from '../client/session-file.js';
import {
  defaultLongTtlSeconds,
  defaultScopes,
  defaultTtlSeconds,
  phasesPlan,
  type RunningStage,
  scenarioNames,
  scenarioPlans,
} from '../client/stage.js';
import { type ClientReport, exitCodeFor, reportVerdict } from '../common/report.js';
import { terminalSafe } from '../common/terminal.js';
import { ConformanceError, exitCodeForError } from '../errors.js';
import { ConsoleReporter } from '../reporters/console.js';
import { coverageLines } from '../reporters/coverage.js';
import { formatClientHtmlReport } from '../reporters/html/client.js';
import { formatJsonReport } from '../reporters/json.js';
import { formatJunitReport } from '../reporters/junit.js';
import { tool } from '../version.js';
import { parseClientArgs } from './client-args.js';
import type { ClientCliConfig } from './client-config.js';
import { hostedClientMain } from './hosted.js';
import { type CliIo, writeReports } from './io.js';

export type { ClientCliConfig };

export const clientUsageText = `Usage: partner-conformance client [options] -- COMMAND [ARGS…]
       partner-conformance client [options]                  (no command: record until Ctrl-C or --duration)
       partner-conformance client --judge SESSION_FILE [--certify] [--report-… FILE]

Certifies a partner's integration: starts a certification stage (a strict token endpoint and partner
API on 127.0.0.1), runs COMMAND (your journey, any language) with PARTNER_AUTH_URL, PARTNER_BASE_URL,
PARTNER_CLIENT_ID, PARTNER_CLIENT_SECRET, PARTNER_TOKEN_URL, PARTNER_AUDIENCE and PARTNER_SCOPES set,
plays the scenario plan, and judges the traffic it recorded.

  --ttl SECONDS          token lifetime of the short phase, the first 3 × --ttl s (default ${defaultTtlSeconds})
  --long-ttl SECONDS     token lifetime after it, where reuse is judged (default ${defaultLongTtlSeconds}, at least 600)
  --scopes "S …"         the client's grant under narrowed-grant (default "${defaultScopes.join(' ')}")
  --scenario NAME        play only these steps (repeatable or comma-separated): ${scenarioNames.join(', ')}
  --no-faults            play no scenario step (tokens still live --ttl seconds)
  --timeout SECONDS      stop the journey's process group after this long (default ${defaultTimeoutSeconds})
  --duration SECONDS     without COMMAND: record this long (default: until Ctrl-C)
  --port N, --auth-port N   ports of the partner API and the token endpoint (default random)
  --listen HOST          interface to listen on (default 127.0.0.1)
  --public-url URL       origin the journey reaches the stage by (e.g. http://host.docker.internal); ports are added
  --json                 without COMMAND: print one JSON line with the addresses and credentials
  --certify              a certification run: follows the certification plan (every operation, all four
                         scopes, every scenario with the narrowed grant, at least one renewal) and passes
                         only when every operation succeeded, every scenario was met, every must check was
                         verified and passed, client-token-reuse and client-retry-after passed and the
                         journey exited 0 (refuses --ttl, --long-ttl, --scopes, --scenario, --no-faults);
                         with --judge: a session without a plan is judged against that plan
  --partner NAME         the partner whose integration this is (in every report)
  --integration-version V   its version or commit (default: git describe of the current directory)
  --only ID,…            judge only these checks
  --save-session FILE    save the recorded session (redacted), to judge again with --judge
  --judge FILE           judge a saved session offline; runs nothing
  --report-json FILE, --report-junit FILE, --report-html FILE
  --service URL          a hosted run: the certification service at URL records, judges and signs the run;
                         the journey runs here against the run's addresses (its reports are written here)
  --service-key-file FILE   the file holding your API key for --service (never the key itself on the command line)
  --attestation FILE     with --service: write the run's signed attestation (partner-conformance verify checks it)

Exit: 0 no must check failed, 1 a must check failed (or, with --certify, the run did not certify: the
verdict lists why), 2 usage error (a missing or non-executable COMMAND, a port in use, a bad flag).
`;

function stageLines(
  stage: RunningStage,
  scenarios: ReturnType<typeof scenarioPlans>,
  enabled: readonly string[],
): string[] {
  return [
    "mode     client (certifying the journey's traffic)",
    `stage    token endpoint ${stage.tokenUrl}`,
    `         partner API    ${stage.baseUrl}`,
    `         partner ${stage.client.partnerId}, authorised ${stage.client.authorizedScopes.join(' ')}`,
    `phases   ${phasesPlan(stage.ttlSeconds, stage.longTtlSeconds, stage.shortPhaseMs)}`,
    ...enabled.map((name) => `scenario ${name}: ${scenarios[name as ScenarioName]}`),
  ];
}

/** `partner-conformance client …`: returns the exit code of the contract. */
export async function clientMain(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    const config = parseClientArgs(argv);
    if (config.help) {
      io.stdout.write(`${clientUsageText}\nChecks: ${clientCheckIds.join(', ')}\n`);
      return 0;
    }
    if (config.service) return await hostedClientMain(config, io);
    const reporter = new ConsoleReporter({ stream: io.stdout, env: io.env });
    let report: ClientReport;
    let session: ClientSession;
    if (config.judge !== undefined) {
      const file = await readSessionFile(config.judge);
      session = file.session;
      report = judgeSession(session, {
        provenance: { source: 'rejudged', sessionSha256: file.sha256, sessionFile: config.judge },
        certify: config.options.certify === true,
        ...(config.options.only && { only: config.options.only }),
        ...(config.options.plan && { plan: config.options.plan }),
      });
      reporter.begin(
        tool,
        [
          `mode     client, judging the saved session ${config.judge}`,
          `journey  ${session.journey.command.join(' ') || '(recorded without a command)'}`,
        ],
        report.checks,
      );
    } else {
      const options = config.options;
      const enabled = options.plan?.scenarios ?? options.scenarios ?? scenarioNames;
      const selected = options.only
        ? clientChecks.filter((check) => options.only!.includes(check.id))
        : clientChecks;
      const version = options.integration?.version ?? (options.command ? gitDescribe() : undefined);
      const run = await runClientConformance({
        ...options,
        ...(version !== undefined && { integration: { ...options.integration, version } }),
        env: io.env,
        ...(io.signal && { signal: io.signal }),
        ...io.clientOverrides,
        onStage: (stage) => {
          io.clientOverrides?.onStage?.(stage);
          if (config.json && !options.command) {
            io.stdout.write(
              `${JSON.stringify({ authUrl: stage.authUrl, baseUrl: stage.baseUrl, tokenUrl: stage.tokenUrl, audience: stage.audience, ...stage.client })}\n`,
            );
            return;
          }
          reporter.begin(
            tool,
            [
              ...(options.plan
                ? [
                    `plan     certification run, plan ${options.plan.id} (sha256 ${options.plan.digest.slice(0, 16)}…)`,
                  ]
                : ['plan     practice run (no certification plan; --certify follows one)']),
              ...stageLines(stage, scenarioPlans(stage.client.authorizedScopes), enabled),
              options.command
                ? `journey  ${options.command.join(' ')}`
                : `recording ${options.durationSeconds ? `for ${options.durationSeconds} s` : 'until Ctrl-C'}; point your program at the addresses above (client id ${stage.client.clientId}; the secret is printed only with --json)`,
            ],
            selected,
          );
        },
      });
      report = run.report;
      session = run.session;
      if (config.saveSession) {
        await mkdir(dirname(config.saveSession), { recursive: true });
        await writeFile(config.saveSession, formatSession(session));
        io.stdout.write(`session saved: ${config.saveSession}\n`);
      }
    }
    io.stdout.write(terminalSafe(`${coverageLines(report).join('\n')}\n\n`));
    for (const result of report.checks) reporter.result(result);
    const journey = report.journey;
    io.stdout.write(
      terminalSafe(
        `\njourney  ${journey.command.join(' ') || '(none)'} — ${journey.ending === 'exited' ? `exit ${journey.exitCode ?? `signal ${journey.signal}`}` : journey.ending}${journey.note ? ` (${journey.note})` : ''}, ${(journey.durationMs / 1000).toFixed(2)} s; ${journey.calls.token} token requests, ${journey.calls.api} API calls${report.recording.dropped > 0 ? `; ${report.recording.dropped} exchanges not recorded (cap ${report.recording.maxExchanges})` : ''}${report.recording.clamped ? `; ${report.recording.clamped} recorded values shortened to the session's bounds (marked "…[N chars]")` : ''}${journey.survivors ? `\n         ${journey.survivors.length} process${journey.survivors.length === 1 ? '' : 'es'} had left the journey's process group and outlived it (stopped): ${journey.survivors.join('; ')}` : ''}\n`,
      ),
    );
    reporter.finish(report);
    const writes: Array<[string, string]> = [];
    if (config.reports.json) writes.push([config.reports.json, formatJsonReport(report)]);
    if (config.reports.junit) writes.push([config.reports.junit, formatJunitReport(report)]);
    if (config.reports.html) writes.push([config.reports.html, formatClientHtmlReport(report, session)]);
    await writeReports(writes, io);
    return Math.max(exitCodeFor(report.checks, { certify: report.certify }), reportVerdict(report).code);
  } catch (error) {
    if (error instanceof ConformanceError) {
      io.stderr.write(`partner-conformance client: ${terminalSafe(error.message)}\n`);
      return exitCodeForError(error);
    }
    const message = error instanceof Error ? error.message : String(error);
    io.stderr.write(`partner-conformance client: internal error: ${terminalSafe(message)}\n`);
    return 1;
  }
}

/** `git describe --always --dirty` of the current directory (the journey's repository), if it is one. */
function gitDescribe(): string | undefined {
  try {
    const out = execFileSync('git', ['describe', '--always', '--dirty', '--tags'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 2000,
    }).trim();
    // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
    return out.length > 0 && out.length <= 200 && !/[\u0000-\u001f]/.test(out) ? out : undefined;
  } catch {
    return undefined;
  }
}
