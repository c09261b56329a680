import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { clientChecks } from '../client/checks/index.js';
import { resolveCommand, runJourney } from '../client/journey.js';
import { defaultTimeoutSeconds } from '../client/run.js';
import type { JourneyRecord } from '../client/session.js';
import type { CreatedRun, FinishedRun } from '../client/stage/hosted.js';
import { journeyEnv } from '../client/stage/stage-client.js';
import { readRegularFile } from '../common/regular-file.js';
import { type ClientReport, exitCodeFor, reportVerdict } from '../common/report.js';
import { terminalSafe } from '../common/terminal.js';
import { ConformanceError, UsageError } from '../errors.js';
import { ConsoleReporter } from '../reporters/console.js';
import { coverageLines } from '../reporters/coverage.js';
import { formatJsonReport } from '../reporters/json.js';
import { formatJunitReport } from '../reporters/junit.js';
import { tool } from '../version.js';
import type { ClientCliConfig } from './client-config.js';
import { type CliIo, writeReports } from './io.js';

/** A request to the certification service, with the partner's key; a refusal throws ConformanceError. */
type ServiceCall = (method: 'GET' | 'POST', path: string, body?: unknown) => Promise<Response>;

/** Longest a request to the service may take (creating and judging a run included). */
const serviceTimeoutMs = 60_000;

/**
 * `partner-conformance client --service URL --service-key-file FILE -- COMMAND`: the run is hosted by
 * the certification service, which records and judges it; the journey runs here, against the run's
 * addresses; the service's report, session and attestation are written here.
 */
export async function hostedClientMain(config: ClientCliConfig, io: CliIo): Promise<number> {
  const service = config.service!;
  const command = config.options.command!;
  resolveCommand(command[0]!, io.env);
  const call = serviceCaller(service, await readServiceKey(config.serviceKeyFile!));
  const options = config.options;
  const created = (await (
    await call('POST', '/api/runs', {
      certify: options.certify === true,
      ...(options.ttlSeconds !== undefined && { ttlSeconds: options.ttlSeconds }),
      ...(options.longTtlSeconds !== undefined && { longTtlSeconds: options.longTtlSeconds }),
      ...(options.scenarios !== undefined && { scenarios: options.scenarios }),
      ...(options.scopes !== undefined && { scopes: options.scopes }),
      ...(options.integration && { integration: options.integration }),
    })
  ).json()) as CreatedRun;
  const reporter = new ConsoleReporter({ stream: io.stdout, env: io.env });
  reporter.begin(tool, hostedRunLines(created, service, command).map(terminalSafe), clientChecks);
  const journey = await runJourney({
    command,
    env: { ...io.env, ...journeyEnv(created, created) },
    timeoutMs: (options.timeoutSeconds ?? defaultTimeoutSeconds) * 1000,
    ...(io.signal && { signal: io.signal }),
    stdio: 'inherit',
  });
  const finished = (await (
    await call('POST', `/api/runs/${created.id}/finish`, {
      journeyExitCode: journey.ending === 'exited' ? journey.exitCode : null,
    })
  ).json()) as FinishedRun;
  const { report } = finished;
  const top = coverageLines(report);
  if (top.length > 0) io.stdout.write(terminalSafe(`${top.join('\n')}\n\n`));
  for (const result of report.checks) reporter.result(result);
  io.stdout.write(terminalSafe(finishedLines(command, journey, finished, created.id)));
  reporter.finish(report);
  await writeReports(await hostedWrites(config, report, call, created.id, io), io);
  return Math.max(exitCodeFor(report.checks, { certify: report.certify }), reportVerdict(report).code);
}

/** The partner's API key, read from `--service-key-file`: one line of 16 to 512 characters, no spaces. */
async function readServiceKey(file: string): Promise<string> {
  const keyText = (await readRegularFile(file, 4096, '--service-key-file')).toString('utf8').trim();
  if (!/^\S{16,512}$/.test(keyText))
    throw new UsageError(
      `--service-key-file ${file} does not hold an API key (one line, no spaces): put the key the vendor gave you in it, alone`,
    );
  return keyText;
}

/**
 * Requests to the service at `service` with the key: unreachable is ERR_UNREACHABLE, a refusal
 * ERR_CREDENTIALS (401) or ERR_SERVICE, saying what the service said.
 */
function serviceCaller(service: string, keyText: string): ServiceCall {
  return async (method, path, body) => {
    let response: Response;
    try {
      response = await fetch(`${service}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${keyText}`,
          accept: 'application/json, text/html',
          ...(body !== undefined && { 'content-type': 'application/json' }),
        },
        ...(body !== undefined && { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(serviceTimeoutMs),
        redirect: 'error',
      });
    } catch (error) {
      throw new ConformanceError(
        'ERR_UNREACHABLE',
        `the certification service at ${service} could not be reached (${(error as Error).cause instanceof Error ? ((error as Error).cause as Error).message : (error as Error).message}): check --service`,
      );
    }
    if (response.ok) return response;
    throw await serviceRefusal(response, method, path);
  };
}

/** The service's refusal as a ConformanceError: its status and its problem's title and detail. */
async function serviceRefusal(response: Response, method: string, path: string): Promise<ConformanceError> {
  const text = (await response.text()).slice(0, 2000);
  let detail = text;
  try {
    const problem = JSON.parse(text) as { title?: string; detail?: string };
    detail = [problem.title, problem.detail].filter(Boolean).join(': ');
  } catch {}
  return new ConformanceError(
    response.status === 401 ? 'ERR_CREDENTIALS' : 'ERR_SERVICE',
    `the certification service refused ${method} ${path} (HTTP ${response.status}): ${detail}${response.status === 401 ? ' — check the key in --service-key-file' : ''}`,
  );
}

/** The console's header of a hosted run: the run, its stage, its grant and scenarios, the journey. */
function hostedRunLines(created: CreatedRun, service: string, command: readonly string[]): string[] {
  return [
    `mode     client, hosted run ${created.id} of ${service} (recorded, judged and signed there)`,
    `stage    token endpoint ${created.tokenUrl}`,
    `         partner API    ${created.baseUrl}`,
    `         authorised ${created.authorizedScopes.join(' ')}; open until ${created.expiresAt}`,
    ...created.plan.filter((item) => item.enabled).map((item) => `scenario ${item.name}: ${item.plan}`),
    `journey  ${command.join(' ')}`,
  ];
}

/** How the journey ended and what the service recorded of it, and where the run is. */
function finishedLines(
  command: readonly string[],
  journey: JourneyRecord,
  { report, status }: FinishedRun,
  id: string,
): string {
  const ending =
    journey.ending === 'exited' ? `exit ${journey.exitCode ?? `signal ${journey.signal}`}` : journey.ending;
  return `\njourney  ${command.join(' ')} — ${ending}, ${(journey.durationMs / 1000).toFixed(2)} s; ${report.journey.calls.token} token requests, ${report.journey.calls.api} API calls, as the service recorded them\nrun      ${report.run?.url ?? id} (${status})\n`;
}

/**
 * The reports asked for, from the service's own bytes where it serves them (the JSON report is its
 * report again: its digest is the one the attestation names); the session is saved at once.
 */
async function hostedWrites(
  config: ClientCliConfig,
  report: ClientReport,
  call: ServiceCall,
  id: string,
  io: CliIo,
): Promise<Array<[string, string]>> {
  const writes: Array<[string, string]> = [];
  if (config.reports.json) writes.push([config.reports.json, formatJsonReport(report)]);
  if (config.reports.junit) writes.push([config.reports.junit, formatJunitReport(report)]);
  if (config.reports.html)
    writes.push([config.reports.html, await (await call('GET', `/api/runs/${id}/report.html`)).text()]);
  if (config.attestation)
    writes.push([config.attestation, await (await call('GET', `/api/runs/${id}/attestation`)).text()]);
  if (config.saveSession) {
    const session = await (await call('GET', `/api/runs/${id}/session`)).text();
    await mkdir(dirname(config.saveSession), { recursive: true });
    await writeFile(config.saveSession, session);
    io.stdout.write(`session saved: ${config.saveSession}\n`);
  }
  return writes;
}
