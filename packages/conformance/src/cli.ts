import { main } from './cli/main.js';

// The bin launcher (bin/partner-conformance.js) imports this module: run and set the exit code.
const argv = process.argv.slice(2);
// Client mode: Ctrl-C (any number of times), SIGTERM and SIGHUP (the terminal closed) stop the journey's
// process group and still judge and write the reports of what was seen. Only SIGKILL leaves the
// journey running without a report (see the README).
const controller = new AbortController();
if (argv[0] === 'client') {
  const judging = argv.includes('--judge');
  const stop = (signal: NodeJS.Signals) => {
    // Judging a file runs nothing: a signal simply ends it.
    if (judging) process.exit(128 + (signal === 'SIGHUP' ? 1 : signal === 'SIGINT' ? 2 : 15));
    if (!controller.signal.aborted) controller.abort();
    else if (signal === 'SIGINT')
      process.stderr.write('partner-conformance: stopping the journey and writing the reports…\n');
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, stop);
  // A closed terminal makes writes to it fail: the reports are files, and they are still written.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});
}
void main(argv, {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  signal: controller.signal,
}).then((code) => {
  process.exitCode = code;
  // Interrupted: the reports are written and the journey stopped — exit now, so that another Ctrl-C
  // cannot land while the process winds down (it ended the process by SIGINT, 130, on busy machines).
  if (controller.signal.aborted) process.exit(code);
});
