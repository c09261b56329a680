import { createClient, createSentinel } from 'redis';
import { createRedisTokenStore } from './dist/index.js';
import { PRIMARY_NAME, startSentinel } from './test/support/redis-sentinel.mjs';

const s = await startSentinel();
const reconnectStrategy = (r) => Math.min(50 * 2 ** r, 500);
const tuned = process.argv[2] === 'tuned';
const c = createSentinel({
  name: PRIMARY_NAME,
  sentinelRootNodes: s.sentinelRootNodes,
  ...(process.argv[3] ? { scanInterval: Number(process.argv[3]) } : {}),
  ...(tuned
    ? {
        nodeClientOptions: { socket: { reconnectStrategy } },
        sentinelClientOptions: { socket: { reconnectStrategy } },
      }
    : {}),
});
const t0 = Date.now();
const log = (m) => console.log(Date.now() - t0, m);
c.on('topology-change', (e) => log('topology ' + e.type + ' ' + (e.node?.port ?? '')));
c.on('ready', () => log('client ready'));
await c.connect();
const sub = createClient({ socket: { port: s.sentinelRootNodes[0].port, host: '127.0.0.1' } });
sub.on('error', () => {});
await sub.connect();
await sub.pSubscribe('*', (m, ch) => log('sentinel says ' + ch + ' ' + String(m).slice(0, 60)));
const store = createRedisTokenStore({
  client: c,
  encryptionKey: Buffer.alloc(32).toString('base64'),
  onEvent: (e) =>
    e.type !== 'redis-error' &&
    log('store ' + e.type + ' ' + (e.message ?? e.skipMs ?? '').toString().slice(0, 70)),
});
await store.get('x');
const p = await s.primaryPort();
log('kill ' + p);
await s.kill(p);
let promoted = false;
const until = Date.now() + 9000;
let lastOk = true;
while (Date.now() < until) {
  if (!promoted) {
    const n = await s.primaryPort();
    if (n !== p) {
      promoted = true;
      log('promoted ' + n);
    }
  }
  const ok = await store.get('x').then(
    () => true,
    () => false,
  );
  if (ok !== lastOk) log('get ' + (ok ? 'ok' : 'fails') + ' isReady=' + c.isReady);
  lastOk = ok;
  await new Promise((r) => setTimeout(r, 50));
}
await s.stop();
process.exit(0);
