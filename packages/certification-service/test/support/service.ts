import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { CreatedRun } from '@partner-lending/conformance';

export const bin = fileURLToPath(new URL('../../bin/partner-certification-service.js', import.meta.url));
export const conformanceBin = fileURLToPath(
  new URL('../../../conformance/bin/partner-conformance.js', import.meta.url),
);
export const curlJourney = fileURLToPath(new URL('../../examples/curl-journey.sh', import.meta.url));
/** The conformance suite's reference client: a correct journey (`BUG=…` breaks it on purpose). */
export const referenceClient = fileURLToPath(
  new URL('../../../conformance/test/clients/reference-client.mjs', import.meta.url),
);

export interface ServeProcess {
  readonly url: string;
  readonly child: ChildProcess;
  /** Everything the process printed so far (stdout and stderr). */
  output(): string;
  /** Sends a signal and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `partner-certification-service serve` as a real process; resolves once it listens. */
export function startServe(options: {
  cwd: string;
  env?: Record<string, string>;
  args?: string[];
}): Promise<ServeProcess> {
  const child = spawn(process.execPath, [bin, 'serve', '--port', '0', ...(options.args ?? [])], {
    cwd: options.cwd,
    env: { ...process.env, DATABASE_URL: '', SIGNING_KEY_FILE: '', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`serve did not start in 60 s:\n${output}`));
    }, 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        child.stderr?.off('data', onData);
        child.stdout?.on('data', (more: Buffer) => (output += more.toString()));
        child.stderr?.on('data', (more: Buffer) => (output += more.toString()));
        resolve({
          url: match[1]!,
          child,
          output: () => output,
          stop: (signal = 'SIGTERM') => {
            if (child.exitCode === null && child.signalCode === null) child.kill(signal);
            return exited;
          },
        });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code} before listening:\n${output}`));
    });
  });
}

/** Runs a command to its end: exit code and output. */
export function runCommand(
  command: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string | undefined>; timeoutMs?: number } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      {
        cwd: options.cwd,
        env: { ...process.env, ...options.env },
        timeout: options.timeoutMs ?? 120_000,
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout, stderr) =>
        resolve({
          code: error ? ((error as { code?: number }).code ?? 1) : 0,
          stdout: String(stdout),
          stderr: String(stderr),
        }),
    );
  });
}

/** `admin add-partner|add-reviewer --name NAME --json`. */
export async function admin(
  what: 'add-partner' | 'add-reviewer',
  name: string,
  options: { cwd: string; env?: Record<string, string> },
): Promise<Record<string, string>> {
  const result = await runCommand(process.execPath, [bin, 'admin', what, '--name', name, '--json'], {
    cwd: options.cwd,
    env: { DATABASE_URL: '', ...options.env },
  });
  if (result.code !== 0) throw new Error(`admin ${what} failed (${result.code}): ${result.stderr}`);
  return JSON.parse(result.stdout) as Record<string, string>;
}

/** Any `admin` command with `--json` on the data directory given: what it printed, parsed. */
export async function adminJson(
  args: string[],
  options: { dataDir: string; env: Record<string, string | undefined> },
): Promise<Record<string, string>> {
  const result = await runCommand(
    process.execPath,
    [bin, 'admin', ...args, '--json', '--data-dir', options.dataDir],
    { env: options.env },
  );
  if (result.code !== 0) throw new Error(`admin ${args[0]} failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as Record<string, string>;
}

/** What `POST /api/runs` answers: conformance's type, the one its hosted client command reads. */
export type { CreatedRun };

export async function api(
  url: string,
  key: string | undefined,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; headers: Headers; text: string; json: () => any }> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: {
      ...(key && { authorization: `Bearer ${key}` }),
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    ...(body !== undefined && { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, json: () => JSON.parse(text) };
}

/**
 * A client-credentials request for a token at the run's token URL (or `url`), as the run's client:
 * `form` adds fields or replaces them (a scope, another secret).
 */
export function runToken(
  run: CreatedRun,
  form: Record<string, string> = {},
  url = run.tokenUrl,
): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: run.clientId,
      client_secret: run.clientSecret,
      ...form,
    }),
  });
}

/** The journey's environment for a run: what `partner-conformance client` hands a journey. */
export function journeyEnv(run: CreatedRun): Record<string, string> {
  return {
    PARTNER_AUTH_URL: run.authUrl,
    PARTNER_BASE_URL: run.baseUrl,
    PARTNER_TOKEN_URL: run.tokenUrl,
    PARTNER_AUDIENCE: run.audience,
    PARTNER_CLIENT_ID: run.clientId,
    PARTNER_CLIENT_SECRET: run.clientSecret,
    PARTNER_SCOPES: run.authorizedScopes.join(' '),
  };
}

/**
 * A run created with `body` (a certification run by default) that the reference client journeys
 * through for 9 s, then finished with the journey's exit code: the run and the judged answer.
 */
export async function journeyRun(
  url: string,
  apiKey: string,
  body: Record<string, unknown> = { certify: true },
): Promise<{ run: CreatedRun; judged: any }> {
  const run = (await api(url, apiKey, 'POST', '/api/runs', body)).json() as CreatedRun;
  const journey = await runCommand(process.execPath, [referenceClient], {
    env: { ...journeyEnv(run), JOURNEY_SECONDS: '9' },
    timeoutMs: 60_000,
  });
  const judged = (
    await api(url, apiKey, 'POST', `/api/runs/${run.id}/finish`, { journeyExitCode: journey.code })
  ).json();
  return { run, judged };
}
