// A real Sentinel set-up for tests: a primary, a replica and three sentinels (redis-server --sentinel,
// quorum 2) on loopback ports, with a 1-s down-after (by default) so that a killed primary is replaced
// within seconds.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, launchRedis, pollCommand, stopPolling } from './redis-process.mjs';

const run = promisify(execFile);
const cli = process.env.REDIS_CLI ?? 'redis-cli';
export const PRIMARY_NAME = 'partner-primary';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Starts a primary, its replica and three sentinels watching them (quorum 2); resolves once the replica
 * has synced and every sentinel knows the two others. `downAfterMs` (1000): the sentinels' down-after.
 */
export async function startSentinel({ downAfterMs = 1_000 } = {}) {
  const root = await mkdtemp(join(tmpdir(), 'partner-redis-sentinel-'));
  const [primaryPort, replicaPort] = [await freePort(), await freePort()];
  const sentinelPorts = [await freePort(), await freePort(), await freePort()];
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
  const sentinels = [];
  for (const port of sentinelPorts) {
    const config = join(root, `sentinel-${port}.conf`);
    await writeFile(
      config,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `sentinel monitor ${PRIMARY_NAME} 127.0.0.1 ${primaryPort} 2`,
        `sentinel down-after-milliseconds ${PRIMARY_NAME} ${downAfterMs}`,
        // A new failover of the same primary may start 2 × this after the last one (repeated failovers).
        `sentinel failover-timeout ${PRIMARY_NAME} 2000`,
        '',
      ].join('\n'),
    );
    sentinels.push({ port, ...launchRedis([config, '--sentinel'], /\+monitor master/) });
  }
  await Promise.all(sentinels.map((s) => s.ready));
  // Sentinels find each other through the primary (hello messages every 2 s): wait until all do.
  for (let i = 0; ; i++) {
    const known = await Promise.all(
      sentinelPorts.map((port) =>
        run(cli, ['-p', String(port), 'sentinel', 'sentinels', PRIMARY_NAME]).then(
          (r) => (r.stdout.match(/^name$/gm) ?? []).length,
          () => 0,
        ),
      ),
    );
    if (known.every((n) => n >= 2)) break;
    if (i > 200) throw new Error(`the sentinels did not find each other (${known.join(', ')})`);
    await sleep(100);
  }
  const nodes = { [primaryPort]: primary, [replicaPort]: replica };
  let current = primaryPort;
  const synced = async (port) =>
    /master_link_status:up/.test(
      await run(cli, ['-p', String(port), 'info', 'replication']).then(
        (r) => r.stdout,
        () => '',
      ),
    );
  const servers = {
    sentinelRootNodes: sentinelPorts.map((port) => ({ host: '127.0.0.1', port })),
    /**
     * The port of the current primary, as the first sentinel to know says: every sentinel is asked, and
     * the newest configuration (highest config-epoch) wins (the leader of a failover announces it
     * first, the others learn it up to seconds later).
     */
    async primaryPort() {
      const views = await Promise.all(
        sentinelPorts.map((port) =>
          pollCommand(port, ['SENTINEL', 'MASTER', PRIMARY_NAME]).then(
            (reply) => {
              // A flat list (RESP2) or a map (RESP3), by the client's protocol.
              const entries = Array.isArray(reply)
                ? reply.flatMap((v, i) => (i % 2 ? [] : [[String(v), reply[i + 1]]]))
                : reply instanceof Map
                  ? [...reply]
                  : Object.entries(reply);
              const fields = new Map(entries.map(([k, v]) => [String(k), String(v)]));
              const field = (name) => fields.get(name);
              return { port: Number(field('port')), epoch: Number(field('config-epoch')) };
            },
            () => ({ port: Number.NaN, epoch: -1 }),
          ),
        ),
      );
      // The newest configuration (highest epoch) is the primary now.
      const newest = views.filter((v) => v.port > 0).sort((a, b) => b.epoch - a.epoch)[0];
      if (newest) current = newest.port;
      return current;
    },
    /**
     * Resolves once every replica of the current primary has acknowledged all it has written (its
     * offset reported to the primary equals the primary's): what was written before a kill is on the
     * replica that will be promoted.
     */
    async replicated() {
      const primary = await servers.primaryPort();
      for (let i = 0; ; i++) {
        const info = await run(cli, ['-p', String(primary), 'info', 'replication']).then(
          (r) => r.stdout,
          () => '',
        );
        const offset = info.match(/master_repl_offset:(\d+)/)?.[1];
        const replicas = [...info.matchAll(/^slave\d+:.*offset=(\d+)/gm)].map((m) => m[1]);
        if (offset !== undefined && replicas.length > 0 && replicas.every((o) => o === offset)) return;
        if (i > 100)
          throw new Error(`the replicas of :${primary} did not catch up (${info.replace(/\s+/g, ' ')})`);
        await sleep(50);
      }
    },
    async kill(port) {
      stopPolling([port]);
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
        // Every sentinel lists it as a live replica: any of them may lead the next failover.
        const lists = await Promise.all(
          sentinelPorts.map((p) =>
            run(cli, ['-p', String(p), 'sentinel', 'replicas', PRIMARY_NAME])
              .then((r) => r.stdout)
              .catch(() => ''),
          ),
        );
        const listed = lists.every((r) => r.includes(String(port)) && !/s_down|o_down|disconnected/.test(r));
        if (listed && (await synced(port))) return;
        if (i > 300) throw new Error(`the restarted node :${port} did not sync and show in the sentinel`);
        await sleep(100);
      }
    },
    async stop() {
      stopPolling(sentinelPorts);
      for (const n of [...Object.values(nodes), ...sentinels]) n.child.kill('SIGKILL');
      await Promise.all([...Object.values(nodes), ...sentinels].map((n) => n.exited));
      await rm(root, { recursive: true, force: true });
    },
  };
  return servers;
}
