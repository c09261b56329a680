import { ServiceError } from '../errors.js';
import { tool } from '../version.js';
import { admin } from './admin.js';
import { parseArguments } from './arguments.js';
import { serve } from './serve.js';
import { fail, usage } from './usage.js';

/** The command: `serve`, `admin SUB`, `--help` or `--version`. */
export async function main(argv: string[]): Promise<void> {
  if (argv.some((arg) => /^--oidc-client-secret(=|$)/.test(arg)))
    fail(
      'the OIDC client secret is not taken on the command line (other users can read it there): put it in a file and pass --oidc-client-secret-file FILE, or set OIDC_CLIENT_SECRET',
    );
  let parsed: ReturnType<typeof parseArguments>;
  try {
    parsed = parseArguments(argv);
  } catch (error) {
    fail(`${(error as Error).message.split('\n')[0]}\n${usage}`);
  }
  const { values, positionals } = parsed;
  if (values.help) return void process.stdout.write(`${usage}\n`);
  if (values.version) return void process.stdout.write(`${tool.version}\n`);
  const [command, sub, ...rest] = positionals;
  const dataDir = values['data-dir'] ?? 'certification-data';
  const databaseUrl = process.env.DATABASE_URL || undefined;
  if (command === 'admin') return admin(sub, rest, values, dataDir, databaseUrl);
  if (command !== 'serve' || sub !== undefined)
    fail(
      `${command ? `unknown command ${JSON.stringify(command.slice(0, 40))}` : 'a command is needed'}\n${usage}`,
    );
  await serve(values, dataDir, databaseUrl);
}

/** Runs the command; an error ends it with its message (exit 3: the storage is in use; 1: unexpected). */
export function run(argv: string[]): void {
  main(argv).catch((error: unknown) => {
    // An InternalError is unexpected too: its stack, exit 1.
    if (error instanceof ServiceError && error.code !== 'ERR_INTERNAL')
      fail(error.message, error.code === 'ERR_STORAGE_IN_USE' ? 3 : 2);
    fail(`unexpected error: ${(error as Error).stack ?? String(error)}`, 1);
  });
}
