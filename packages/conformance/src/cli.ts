import { main } from './cli-main.js';

// The bin launcher (bin/partner-conformance.js) imports this module: run and set the exit code.
void main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
