// The command's entry (dist/cli.js, which bin/ launches): the command itself is in cli/ (src/README.md).
import { run } from './cli/main.js';

run(process.argv.slice(2));
