// What the Redis test set-ups share: a free loopback port, and a redis-server process that is waited
// for (`marker` in its output) and killed when the test process ends, however it ends.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';

const binary = process.env.REDIS_SERVER ?? 'redis-server';

const running = new Set();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Starts redis-server with `args`; `ready` resolves once its output matches `marker` (10 s at most). */
export function launchRedis(args, marker = /Ready to accept connections/) {
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  exited.then(() => running.delete(child));
  let output = '';
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`redis-server did not start in 10 s:\n${output}`)),
      10_000,
    );
    const onData = (chunk) => {
      output += chunk;
      if (marker.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited (${code ?? signal}):\n${output}`));
    });
  });
  return { child, ready, exited };
}

/**
 * One command on the server at `port` over a connection kept open (created on first use, replaced
 * after a failure), bounded by `timeoutMs`: how the test set-ups poll a topology many times a second
 * without starting a redis-cli process each time.
 */
const polling = new Map();
process.once('exit', () => {
  for (const client of polling.values()) client.destroy();
});
export async function pollCommand(port, args, timeoutMs = 2_000) {
  const { createClient } = await import('redis');
  let client = polling.get(port);
  if (client === undefined) {
    client = createClient({
      socket: { host: '127.0.0.1', port, connectTimeout: timeoutMs, reconnectStrategy: false },
    });
    client.on('error', () => {});
    polling.set(port, client);
  }
  try {
    if (!client.isOpen) await client.connect();
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer from :${port} within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([client.sendCommand(args), timeout]);
    } finally {
      clearTimeout(timer);
    }
  } catch (error) {
    polling.delete(port);
    if (client.isOpen) client.destroy();
    throw error;
  }
}

/** Closes the polling connections to `ports` (a set-up that stops). */
export function stopPolling(ports) {
  for (const port of ports) {
    const client = polling.get(port);
    polling.delete(port);
    if (client?.isOpen) client.destroy();
  }
}
