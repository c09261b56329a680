import { terminalSafe } from '../common/terminal.js';
import { ConformanceError, exitCodeForError } from '../errors.js';
import { clientMain } from './client.js';
import { type CliIo, defaultIo } from './io.js';
import { serverMain } from './server.js';
import { verifyMain } from './verify.js';

export type { CliIo } from './io.js';
export { writeReports } from './io.js';

/** The `partner-conformance` command: dispatches to a mode and returns the exit code of the contract (0/1/2/3). */
export async function main(argv: readonly string[], io: CliIo = defaultIo()): Promise<number> {
  if (argv[0] === 'client') return clientMain(argv.slice(1), io);
  if (argv[0] === 'verify') return verifyMain(argv.slice(1), io);
  try {
    return await serverMain(argv, io);
  } catch (error) {
    if (error instanceof ConformanceError) {
      io.stderr.write(`partner-conformance: ${terminalSafe(error.message)}\n`);
      return exitCodeForError(error);
    }
    // Anything else is a bug of the suite: one line, no stack trace, and not a pass.
    const message = error instanceof Error ? error.message : String(error);
    io.stderr.write(`partner-conformance: internal error: ${terminalSafe(message)}\n`);
    return 1;
  }
}
