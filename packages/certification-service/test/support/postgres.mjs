import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/** Debian's PostgreSQL binaries (any major version), if installed. */
/** @returns {string | undefined} */
export function postgresBin() {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  for (const version of versions)
    if (existsSync(join(root, version, 'bin', 'initdb'))) return join(root, version, 'bin');
  return undefined;
}

/** @returns {{ uid: number, gid: number }} */
function postgresUser() {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('postgres:'));
  if (!line)
    throw new Error(
      'no postgres user to run PostgreSQL as (root cannot): apt-get install postgresql creates it',
    );
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/** A free loopback port. @returns {Promise<number>} */
export const freePort = () =>
  new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {{ port: number }} */ (server.address());
      server.close(() => resolve(port));
    });
  });

/**
 * A throwaway PostgreSQL cluster from Debian's binaries, on 127.0.0.1 and a random port, trust
 * authentication, removed on stop; `durable` keeps fsync on (a bench), tests turn it off. PostgreSQL refuses to run as root: as root, it runs as the
 * `postgres` user Debian's package creates. `settings` are more server settings (`-c name=value`).
 * @param {{ durable?: boolean, settings?: Record<string, string> }} [options]
 */
export async function startPostgres({ durable = false, settings = {} } = {}) {
  const bin = postgresBin();
  if (!bin)
    throw new Error('PostgreSQL is not installed: apt-get install postgresql (the test needs its binaries)');
  const dir = mkdtempSync(join(tmpdir(), 'pcs-pg-'));
  chmodSync(dir, 0o777);
  // As root, the cluster runs as Debian's postgres user (PostgreSQL refuses root).
  const user = process.getuid?.() === 0 ? postgresUser() : {};
  const data = join(dir, 'data');
  execFileSync(
    join(bin, 'initdb'),
    ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8'],
    {
      stdio: 'ignore',
      ...user,
    },
  );
  const port = await freePort();
  const launch = () =>
    spawn(
      join(bin, 'postgres'),
      [
        '-D',
        data,
        '-p',
        String(port),
        '-h',
        '127.0.0.1',
        '-k',
        dir,
        // Tests skip the flushes to disk; a bench (durable) keeps PostgreSQL's defaults.
        ...(durable ? [] : ['-c', 'fsync=off']),
        '-c',
        'max_connections=200',
        ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
      ],
      { stdio: 'ignore', ...user },
    );
  let server = launch();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const ready = async () => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const client = new pg.Client({ connectionString: url });
      try {
        await client.connect();
        await client.end();
        break;
      } catch (error) {
        await client.end().catch(() => {});
        if (Date.now() > deadline || server.exitCode !== null)
          throw new Error(`PostgreSQL did not start: ${/** @type {Error} */ (error).message}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  };
  await ready();
  /** Fast shutdown; a server that hangs is killed after 10 s. */
  const halt = async () => {
    server.kill('SIGINT');
    const killer = setTimeout(() => server.kill('SIGKILL'), 10_000);
    await new Promise((resolve) => (server.exitCode !== null ? resolve(null) : server.once('exit', resolve)));
    clearTimeout(killer);
  };
  return {
    url,
    /** @param {string} name */
    async database(name) {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query(`CREATE DATABASE ${name}`);
      await client.end();
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
    /**
     * The URL of database `name` (made by `database`) through the server's Unix socket rather than TCP
     * on the loopback (pg's `host` parameter: the socket's directory).
     * @param {string} name
     */
    socketUrl: (name) => `postgres://postgres@localhost:${port}/${name}?host=${encodeURIComponent(dir)}`,
    /** Stops the server (an outage: connections refused), keeping its data for `resume`. */
    halt,
    /**
     * A crash: the server and every process of it SIGKILLed at once (the postmaster stopped first, so that
     * it starts nothing meanwhile), with nothing written that was not written already. `resume` then
     * starts it again, recovering from its log as after a power cut of the server alone.
     */
    async crash() {
      const postmaster = /** @type {number} */ (server.pid);
      process.kill(postmaster, 'SIGSTOP');
      /** The state and parent of process `pid`, undefined once it is gone. */
      const stat = (pid) => {
        try {
          const [state, parent] = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
          return { state, parent: Number(parent) };
        } catch {
          return undefined;
        }
      };
      const children = readdirSync('/proc')
        .filter((name) => /^\d+$/.test(name) && stat(name)?.parent === postmaster)
        .map(Number);
      for (const pid of [...children, postmaster])
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Gone meanwhile.
        }
      // Dead once gone or a zombie (nothing of it left attached to the server's shared memory).
      const deadline = Date.now() + 10_000;
      while ([...children, postmaster].some((pid) => (stat(pid)?.state ?? 'Z') !== 'Z')) {
        if (Date.now() > deadline) throw new Error('PostgreSQL did not die on SIGKILL within 10 s');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    /** Starts the halted server again on the same port and data; resolves once it accepts connections. */
    async resume() {
      server = launch();
      await ready();
    },
    async stop() {
      if (server.exitCode === null && server.signalCode === null) await halt();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
