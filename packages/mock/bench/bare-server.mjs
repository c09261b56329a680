// The floor of the benchmark: a bare node:http server answering every request with a fixed page of
// 20 loans (what the mock answers), with no routing, no token check and no log. Prints its port.
import { createServer } from 'node:http';

const loans = Array.from({ length: 20 }, (_, index) => ({
  id: `loan-${String(index + 1).padStart(4, '0')}`,
  partnerId: 'partner-bench',
  amount: 500 + index * 50,
  currency: 'EUR',
  status: 'active',
  createdAt: new Date(Date.UTC(2026, 0, index + 1)).toISOString(),
}));
const server = createServer((_req, res) => {
  const text = JSON.stringify(loans);
  res.writeHead(200, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
    'X-Total-Count': '25',
  });
  res.end(text);
});
server.listen(0, '127.0.0.1', () =>
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`),
);
process.on('SIGTERM', () => server.close(() => process.exit(0)));
