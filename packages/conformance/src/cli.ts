import { main } from './cli/main.js';

// The bin launcher (bin/partner-conformance.js) imports this module: run and set the exit code.
const argv = process.argv.slice(2);
// Client mode: Ctrl-C (or SIGTERM) stops the journey and still judges and reports what was seen.
const controller = new AbortController();
if (argv[0] === 'client') {
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
void main(argv, {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  signal: controller.signal,
}).then((code) => {
  process.exitCode = code;
});
