// A real Redis Cluster for tests: 3 primaries and 3 replicas (redis-server --cluster-enabled) on
// loopback ports, joined with `redis-cli --cluster create`, with a 1-s node timeout so that a killed
// primary is replaced by its replica within seconds. Stopped by the caller (and on process exit).
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, launchRedis, pollCommand, stopPolling } from './redis-process.mjs';

const run = promisify(execFile);
const cli = process.env.REDIS_CLI ?? 'redis-cli';

async function launch(port, root) {
  // A directory per node: a replica's full sync writes an RDB file there.
  const dir = join(root, String(port));
  await mkdir(dir, { recursive: true });
  const node = launchRedis([
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    join(dir, `nodes-${port}.conf`),
    '--cluster-node-timeout',
    '1000',
    '--cluster-replica-validity-factor',
    '0',
    '--repl-diskless-sync-delay',
    '0',
    '--daemonize',
    'no',
  ]);
  return { port, ...node };
}

/** A free port whose cluster bus port (+10000) is free as well. */
async function freeClusterPort() {
  for (let i = 0; ; i++) {
    const port = await freePort();
    if (port + 10_000 > 65_535) continue;
    const bus = await new Promise((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port + 10_000, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (bus) return port;
    if (i > 50) throw new Error('no free port pair (port, port + 10000) for a cluster node');
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function redis(port, ...args) {
  const { stdout } = await run(cli, ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 5_000 });
  return stdout;
}

/** Starts a 3-primary, 3-replica cluster and waits until every node reports cluster_state:ok. */
export async function startCluster() {
  const dir = await mkdtemp(join(tmpdir(), 'partner-redis-cluster-'));
  const nodes = [];
  for (let i = 0; i < 6; i++) nodes.push(await launch(await freeClusterPort(), dir));
  await Promise.all(nodes.map((n) => n.ready));
  await run(
    cli,
    [
      '--cluster',
      'create',
      ...nodes.map((n) => `127.0.0.1:${n.port}`),
      '--cluster-replicas',
      '1',
      '--cluster-yes',
    ],
    { timeout: 30_000 },
  );
  const slots = new Map();
  const alive = () => nodes.filter((n) => n.child.exitCode === null && n.child.signalCode === null);
  const cluster = {
    nodes,
    rootNodes: nodes.map((n) => ({ url: `redis://127.0.0.1:${n.port}` })),
    /** Resolves once every live node says cluster_state:ok and knows 3 primaries. */
    async waitHealthy(timeoutMs = 30_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const states = await Promise.all(
          alive().map((n) => redis(n.port, 'cluster', 'info').catch(() => '')),
        );
        // …and every replica has synced with its primary (a replica that never did cannot take over).
        const links = await Promise.all(
          alive().map((n) => redis(n.port, 'info', 'replication').catch(() => '')),
        );
        const synced = links.every((l) => !/role:slave/.test(l) || /master_link_status:up/.test(l));
        if (synced && states.every((s) => /cluster_state:ok/.test(s) && /cluster_size:3/.test(s))) return;
        if (Date.now() > until) throw new Error(`the cluster did not become healthy:\n${states.join('\n')}`);
        await sleep(200);
      }
    },
    /**
     * The port of the primary serving `key`'s slot, as the primaries say of themselves: each live
     * node's own line (`myself,master`) and the slots it claims; of two claims (a restarted primary
     * that has not heard of its successor yet), the higher config epoch wins, as in the cluster. Not
     * one node's view of the others: gossip reaches a replica later than the promoted primary (and the
     * store) knows of the promotion. Throws when no live node claims the slot (before a promotion).
     */
    async primaryOf(key) {
      const nodesNow = alive();
      // Polled many times a second during a failover: over connections kept open, not redis-cli.
      if (!slots.has(key))
        slots.set(key, Number(await pollCommand(nodesNow[0].port, ['CLUSTER', 'KEYSLOT', key])));
      const slot = slots.get(key);
      const views = await Promise.all(
        nodesNow.map((n) => pollCommand(n.port, ['CLUSTER', 'NODES']).catch(() => '')),
      );
      let owner;
      for (const view of views) {
        const self = String(view)
          .trim()
          .split('\n')
          .find((line) => line.split(' ')[2]?.split(',').includes('myself'));
        if (self === undefined) continue;
        const [, address, flags, , , , epoch, , ...ranges] = self.split(' ');
        if (!flags.split(',').includes('master')) continue;
        const claims = ranges.some((range) => {
          const [from, to = from] = range.split('-').map(Number);
          return slot >= from && slot <= to;
        });
        if (claims && (owner === undefined || Number(epoch) > owner.epoch))
          owner = { port: Number(address.split(':')[1].split('@')[0]), epoch: Number(epoch) };
      }
      if (owner === undefined) throw new Error(`no live primary claims slot ${slot}`);
      return owner.port;
    },
    /** SIGKILL of one node (a lost primary). */
    async kill(port) {
      const node = nodes.find((n) => n.port === port);
      stopPolling([port]);
      node.child.kill('SIGKILL');
      await node.exited;
    },
    /**
     * Starts a killed node again on its port with its own nodes.conf: it rejoins the cluster as a
     * replica of the node promoted in its place. Resolves once the cluster is healthy again.
     */
    async restart(port) {
      const index = nodes.findIndex((n) => n.port === port);
      const node = await launch(port, dir);
      nodes[index] = node;
      await node.ready;
      await cluster.waitHealthy();
    },
    async stop() {
      stopPolling(nodes.map((n) => n.port));
      for (const n of nodes) n.child.kill('SIGKILL');
      await Promise.all(nodes.map((n) => n.exited));
      await rm(dir, { recursive: true, force: true });
    },
  };
  await cluster.waitHealthy();
  return cluster;
}
