import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('./webhook-receiver.py', import.meta.url));

/** A line the Python receiver printed. */
export type ReceiverLine =
  | { listening: number }
  | { id: string; type: string; data: Record<string, unknown>; timestamp: string }
  | { rejected: string; id: string | null }
  | { refused: string; type: string }
  | { control: boolean };

export interface Receiver {
  url: string;
  lines: ReceiverLine[];
  /** The deliveries it accepted. */
  accepted(): Array<{ id: string; type: string; data: Record<string, unknown> }>;
  refuse(on: boolean): Promise<void>;
  /** Waits (bounded) until `test` holds on the lines. */
  until(test: (lines: ReceiverLine[]) => boolean, what: string, timeoutMs?: number): Promise<void>;
  stop(): void;
}

/** Starts the Python webhook receiver with `secret` (or none yet: `setSecret` later), on a random port. */
export async function startReceiver(
  secret?: string,
): Promise<Receiver & { setSecret(secret: string): void }> {
  const dir = mkdtempSync(join(tmpdir(), 'pcs-receiver-'));
  const secretFile = join(dir, 'secret');
  if (secret !== undefined) writeFileSync(secretFile, secret, { mode: 0o600 });
  const child: ChildProcess = spawn('python3', [script, secretFile], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: ReceiverLine[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error('the Python receiver did not start within 20 s')),
      20_000,
    );
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const parsed = JSON.parse(line) as ReceiverLine;
      lines.push(parsed);
      if ('listening' in parsed) {
        clearTimeout(timer);
        resolve(parsed.listening);
      }
    });
    child.once('exit', (code) => reject(new Error(`the Python receiver exited with ${code}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  const receiver = {
    setSecret: (value: string) => writeFileSync(secretFile, value, { mode: 0o600 }),
    url,
    lines,
    accepted: () =>
      lines.filter((line): line is Extract<ReceiverLine, { type: string; data: unknown }> => 'data' in line),
    async refuse(on: boolean) {
      const response = await fetch(`${url}/_control`, {
        method: 'POST',
        body: JSON.stringify({ refuse: on }),
      });
      if (response.status !== 204) throw new Error(`the receiver's control answered ${response.status}`);
    },
    async until(test: (lines: ReceiverLine[]) => boolean, what: string, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (!test(lines)) {
        if (Date.now() > deadline)
          throw new Error(
            `the receiver did not see ${what} within ${timeoutMs} ms; it saw ${JSON.stringify(lines)}`,
          );
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    stop: () => void child.kill('SIGTERM'),
  };
  return receiver;
}
