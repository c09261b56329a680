// A real redis-server for tests and benchmarks: its own temp dir, a free loopback port, no
// persistence (`--save ''`, `--appendonly no`), stopped by the caller. Never a mocked Redis.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, launchRedis } from './redis-process.mjs';

function launch(port, dir, cluster, extra = []) {
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...extra];
  args.push('--dir', dir, '--daemonize', 'no', '--loglevel', 'notice');
  if (cluster) args.push('--cluster-enabled', 'yes', '--cluster-config-file', join(dir, 'nodes.conf'));
  return launchRedis(args);
}

/**
 * Starts redis-server on 127.0.0.1. `cluster: true` runs it in cluster mode with every slot assigned
 * to itself, so that a script touching keys of two slots fails with CROSSSLOT as in a real cluster.
 */
export async function startRedis({ cluster = false, password = undefined } = {}) {
  const extra = password === undefined ? [] : ['--requirepass', password];
  const dir = await mkdtemp(join(tmpdir(), 'partner-redis-'));
  let port = 0;
  let current;
  for (let attempt = 0; ; attempt++) {
    port = await freePort();
    current = launch(port, dir, cluster, extra);
    try {
      await current.ready;
      break;
    } catch (error) {
      current.child.kill('SIGKILL');
      if (attempt >= 4) {
        await rm(dir, { recursive: true, force: true });
        throw error;
      }
    }
  }
  const url = `redis://127.0.0.1:${port}`;
  const redis = {
    port,
    url,
    dir,
    /** SIGKILL: the server vanishes without closing anything (a crash, a lost node). */
    async kill() {
      if (current.child.exitCode === null && current.child.signalCode === null) {
        current.child.kill('SIGKILL');
        await current.exited;
      }
    },
    /**
     * SIGSTOP: the server hangs. Its port still accepts connections and writes (the kernel queues
     * them) but nothing is answered, as a stuck primary or a network black hole.
     */
    pause() {
      current.child.kill('SIGSTOP');
    },
    /** SIGCONT: the hung server answers again, the queued commands first. */
    resume() {
      current.child.kill('SIGCONT');
    },
    /** Starts it again on the same port (empty: nothing was persisted). */
    async restart() {
      await redis.kill();
      for (let attempt = 0; ; attempt++) {
        current = launch(port, dir, cluster, extra);
        try {
          await current.ready;
          return;
        } catch (error) {
          current.child.kill('SIGKILL');
          if (attempt >= 20) throw error;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    },
    async stop() {
      if (current.child.exitCode === null && current.child.signalCode === null) {
        current.child.kill('SIGCONT');
        current.child.kill('SIGTERM');
        const timer = setTimeout(() => current.child.kill('SIGKILL'), 5_000);
        await current.exited;
        clearTimeout(timer);
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
  return redis;
}
