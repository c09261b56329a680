// Runs one mock in its own process for the benchmark: startMock with the JSON options of argv[2];
// prints one JSON line (addresses and the first client) once listening; closes on SIGTERM/SIGINT.
import { startMock } from '../dist/index.js';

const mock = await startMock(JSON.parse(process.argv[2] ?? '{}'));
const { partnerId, clientId, clientSecret } = mock.clients[0];
process.stdout.write(
  `${JSON.stringify({ authUrl: mock.authUrl, baseUrl: mock.baseUrl, audience: mock.audience, partnerId, clientId, clientSecret })}\n`,
);
const stop = () => mock.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
