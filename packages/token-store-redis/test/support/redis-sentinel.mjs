// A real Sentinel set-up for tests: a primary, a replica and one sentinel (redis-server --sentinel)
// on loopback ports, with a 1-s down-after so that a killed primary is replaced within seconds.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, launchRedis } from './redis-process.mjs';

const run = promisify(execFile);
const cli = process.env.REDIS_CLI ?? 'redis-cli';
export const PRIMARY_NAME = 'partner-primary';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts a primary, its replica and a sentinel watching them; resolves once the replica has synced. */
export async function startSentinel() {
  const root = await mkdtemp(join(tmpdir(), 'partner-redis-sentinel-'));
  const [primaryPort, replicaPort, sentinelPort] = [await freePort(), await freePort(), await freePort()];
  const node = async (port, extra = []) => {
    const dir = join(root, String(port));
    await mkdir(dir, { recursive: true });
    const base = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
    return {
      port,
      ...launchRedis([...base, '--dir', dir, '--repl-diskless-sync-delay', '0', ...extra], /Ready to accept/),
    };
  };
  const primary = await node(primaryPort);
  const replica = await node(replicaPort, ['--replicaof', '127.0.0.1', String(primaryPort)]);
  await Promise.all([primary.ready, replica.ready]);
  for (let i = 0; ; i++) {
    const info = await run(cli, ['-p', String(replicaPort), 'info', 'replication']).then((r) => r.stdout);
    if (/master_link_status:up/.test(info)) break;
    if (i > 100) throw new Error('the replica did not sync');
    await sleep(100);
  }
  const config = join(root, 'sentinel.conf');
  await writeFile(
    config,
    [
      `port ${sentinelPort}`,
      'bind 127.0.0.1',
      `sentinel monitor ${PRIMARY_NAME} 127.0.0.1 ${primaryPort} 1`,
      `sentinel down-after-milliseconds ${PRIMARY_NAME} 1000`,
      // A new failover of the same primary may start 2 × this after the last one (repeated failovers).
      `sentinel failover-timeout ${PRIMARY_NAME} 2000`,
      '',
    ].join('\n'),
  );
  const sentinel = { port: sentinelPort, ...launchRedis([config, '--sentinel'], /\+monitor master/) };
  await sentinel.ready;
  const nodes = { [primaryPort]: primary, [replicaPort]: replica };
  const synced = async (port) =>
    /master_link_status:up/.test(
      await run(cli, ['-p', String(port), 'info', 'replication']).then(
        (r) => r.stdout,
        () => '',
      ),
    );
  const servers = {
    sentinelRootNodes: [{ host: '127.0.0.1', port: sentinelPort }],
    /** The port of the current primary, as the sentinel says. */
    async primaryPort() {
      const { stdout } = await run(cli, [
        '-p',
        String(sentinelPort),
        'sentinel',
        'get-master-addr-by-name',
        PRIMARY_NAME,
      ]);
      return Number(stdout.trim().split('\n')[1]);
    },
    async kill(port) {
      nodes[port].child.kill('SIGKILL');
      await nodes[port].exited;
    },
    /**
     * Starts a killed node again on its port as a replica of the current primary, and resolves once it
     * has synced and the sentinel lists it (so that the next failover can promote it).
     */
    async restart(port) {
      const current = await servers.primaryPort();
      nodes[port] = await node(port, ['--replicaof', '127.0.0.1', String(current)]);
      await nodes[port].ready;
      for (let i = 0; ; i++) {
        const replicas = await run(cli, ['-p', String(sentinelPort), 'sentinel', 'replicas', PRIMARY_NAME])
          .then((r) => r.stdout)
          .catch(() => '');
        const listed = replicas.includes(String(port)) && !/s_down|o_down|disconnected/.test(replicas);
        if (listed && (await synced(port))) return;
        if (i > 300) throw new Error(`the restarted node :${port} did not sync and show in the sentinel`);
        await sleep(100);
      }
    },
    async stop() {
      for (const n of [...Object.values(nodes), sentinel]) n.child.kill('SIGKILL');
      await Promise.all([...Object.values(nodes), sentinel].map((n) => n.exited));
      await rm(root, { recursive: true, force: true });
    },
  };
  return servers;
}
