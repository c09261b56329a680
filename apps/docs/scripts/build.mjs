// `pnpm --filter @partner-lending/docs build`: the site needs the workspace packages built first (the
// bundled spec, the packages whose examples the guides show). Called directly, this script hands over
// to turbo, which builds the dependencies (cached) and then runs this script again as the docs' own
// build task; turbo sets TURBO_HASH in its tasks, and then the site itself is built.
import { spawnSync } from 'node:child_process';

const env = { ...process.env, TURBO_TELEMETRY_DISABLED: '1', DO_NOT_TRACK: '1' };
const [command, args] = process.env.TURBO_HASH
  ? ['pnpm', ['exec', 'vitepress', 'build']]
  : ['pnpm', ['exec', 'turbo', 'run', 'build', '--filter=@partner-lending/docs', '--output-logs=new-only']];
const result = spawnSync(command, args, { stdio: 'inherit', env });
if (result.error) throw result.error;
process.exit(result.status ?? 1);
