import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const mockBin = fileURLToPath(new URL('../../../mock/bin/partner-mock.js', import.meta.url));

/** The production gate as a process (`partner-mock --profile production --json`), reading `registerUrl`. */
export interface Gate {
  authUrl: string;
  baseUrl: string;
  /** Stops it (SIGTERM) and waits for it to exit. */
  stop(): Promise<void>;
}

/** Starts the production gate on random ports; `extra` are more of its flags. */
export async function startGate(
  registerUrl: string,
  keyFile: string,
  clientsFile: string,
  extra: string[] = [],
): Promise<Gate> {
  const child = spawn(
    process.execPath,
    [
      mockBin,
      '--profile',
      'production',
      '--register',
      registerUrl,
      '--register-key-file',
      keyFile,
      '--clients',
      clientsFile,
      '--json',
      ...extra,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const started = await new Promise<{ authUrl: string; baseUrl: string }>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error('the production gate did not start within 30 s')),
      30_000,
    );
    createInterface({ input: child.stdout! }).once('line', (line) => {
      clearTimeout(timer);
      resolve(JSON.parse(line));
    });
    child.once('exit', (code) => reject(new Error(`the production gate exited with ${code}`)));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    ...started,
    stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
