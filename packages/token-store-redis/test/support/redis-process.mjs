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
