import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { clientChecks } from '../client/checks/index.js';
import { resolveCommand, runJourney } from '../client/journey.js';
import { defaultTimeoutSeconds } from '../client/run.js';
import { readRegularFile } from '../common/regular-file.js';
import { type ClientReport, exitCodeFor, reportVerdict } from '../common/report.js';
import { terminalSafe } from '../common/terminal.js';
import { ConformanceError } from '../errors.js';
import { ConsoleReporter } from '../reporters/console.js';
import { coverageLines } from '../reporters/coverage.js';
import { formatJsonReport } from '../reporters/json.js';
import { formatJunitReport } from '../reporters/junit.js';
import { tool } from '../version.js';
import type { ClientCliConfig } from './client-config.js';
import { type CliIo, writeReports } from './io.js';

/** What `POST /api/runs` of the certification service answers. */
interface HostedRun {
  id: string;
  authUrl: string;
  baseUrl: string;
  tokenUrl: string;
  audience: string;
  clientId: string;
  clientSecret: string;
  authorizedScopes: string[];
  plan: Array<{ name: string; enabled: boolean; plan: string }>;
  expiresAt: string;
}

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
  const env = io.env;
  resolveCommand(command[0]!, env);
  const keyText = (await readRegularFile(config.serviceKeyFile!, 4096, '--service-key-file'))
    .toString('utf8')
    .trim();
  if (!/^\S{16,512}$/.test(keyText))
    throw new ConformanceError(
      'ERR_USAGE',
      `--service-key-file ${config.serviceKeyFile} does not hold an API key (one line, no spaces): put the key the vendor gave you in it, alone`,
    );
  const call = async (method: 'GET' | 'POST', path: string, body?: unknown): Promise<Response> => {
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
    const text = (await response.text()).slice(0, 2000);
    let detail = text;
    try {
      const problem = JSON.parse(text) as { title?: string; detail?: string };
      detail = [problem.title, problem.detail].filter(Boolean).join(': ');
    } catch {}
    throw new ConformanceError(
      response.status === 401 ? 'ERR_CREDENTIALS' : 'ERR_SERVICE',
      `the certification service refused ${method} ${path} (HTTP ${response.status}): ${detail}${response.status === 401 ? ' — check the key in --service-key-file' : ''}`,
    );
  };

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
  ).json()) as HostedRun;
  const reporter = new ConsoleReporter({ stream: io.stdout, env: io.env });
  reporter.begin(
    tool,
    [
      `mode     client, hosted run ${created.id} of ${service} (recorded, judged and signed there)`,
      `stage    token endpoint ${created.tokenUrl}`,
      `         partner API    ${created.baseUrl}`,
      `         authorised ${created.authorizedScopes.join(' ')}; open until ${created.expiresAt}`,
      ...created.plan.filter((item) => item.enabled).map((item) => `scenario ${item.name}: ${item.plan}`),
      `journey  ${command.join(' ')}`,
    ].map(terminalSafe),
    clientChecks,
  );
  const journey = await runJourney({
    command,
    env: {
      ...env,
      PARTNER_AUTH_URL: created.authUrl,
      PARTNER_BASE_URL: created.baseUrl,
      PARTNER_TOKEN_URL: created.tokenUrl,
      PARTNER_AUDIENCE: created.audience,
      PARTNER_CLIENT_ID: created.clientId,
      PARTNER_CLIENT_SECRET: created.clientSecret,
      PARTNER_SCOPES: created.authorizedScopes.join(' '),
    },
    timeoutMs: (options.timeoutSeconds ?? defaultTimeoutSeconds) * 1000,
    ...(io.signal && { signal: io.signal }),
    stdio: 'inherit',
  });
  const finished = (await (
    await call('POST', `/api/runs/${created.id}/finish`, {
      journeyExitCode: journey.ending === 'exited' ? journey.exitCode : null,
    })
  ).json()) as { report: ClientReport; status: string };
  const report = finished.report;
  const top = coverageLines(report);
  if (top.length > 0) io.stdout.write(terminalSafe(`${top.join('\n')}\n\n`));
  for (const result of report.checks) reporter.result(result);
  io.stdout.write(
    terminalSafe(
      `\njourney  ${command.join(' ')} — ${journey.ending === 'exited' ? `exit ${journey.exitCode ?? `signal ${journey.signal}`}` : journey.ending}, ${(journey.durationMs / 1000).toFixed(2)} s; ${report.journey.calls.token} token requests, ${report.journey.calls.api} API calls, as the service recorded them\nrun      ${report.run?.url ?? created.id} (${finished.status})\n`,
    ),
  );
  reporter.finish(report);
  const writes: Array<[string, string]> = [];
  // The JSON report is the service's own bytes again: its digest is the one the attestation names.
  if (config.reports.json) writes.push([config.reports.json, formatJsonReport(report)]);
  if (config.reports.junit) writes.push([config.reports.junit, formatJunitReport(report)]);
  if (config.reports.html)
    writes.push([
      config.reports.html,
      await (await call('GET', `/api/runs/${created.id}/report.html`)).text(),
    ]);
  if (config.attestation)
    writes.push([
      config.attestation,
      await (await call('GET', `/api/runs/${created.id}/attestation`)).text(),
    ]);
  if (config.saveSession) {
    const session = await (await call('GET', `/api/runs/${created.id}/session`)).text();
    await mkdir(dirname(config.saveSession), { recursive: true });
    await writeFile(config.saveSession, session);
    io.stdout.write(`session saved: ${config.saveSession}\n`);
  }
  await writeReports(writes, io);
  return Math.max(exitCodeFor(report.checks, { certify: report.certify }), reportVerdict(report).code);
}
