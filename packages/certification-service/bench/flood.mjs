// Partner B's flood, in a process of its own (so that its sending does not share the measured
// process's CPU time): waves of BENCH_FLOOD concurrent `POST /api/runs` until stdin closes; each run
// accepted is finished at once, so that the next wave has room again (accepted and refused creations
// mixed). Prints the statuses it got, as JSON, on exit.
const { FLOOD_URL: url, FLOOD_KEY: key } = process.env;
const size = Number(process.env.BENCH_FLOOD ?? 200);
const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
const statuses = {};
let stop = false;
process.stdin.on('data', () => {});
process.stdin.on('end', () => {
  stop = true;
});
let waves = 0;
while (!stop) {
  waves += 1;
  await Promise.all(
    Array.from({ length: size }, async () => {
      try {
        const response = await fetch(`${url}/api/runs`, {
          method: 'POST',
          headers,
          body: '{"scenarios":[]}',
        });
        statuses[response.status] = (statuses[response.status] ?? 0) + 1;
        const body = await response.json();
        if (response.status === 201)
          await (
            await fetch(`${url}/api/runs/${body.id}/finish`, { method: 'POST', headers, body: '{}' })
          ).text();
      } catch {
        statuses.error = (statuses.error ?? 0) + 1;
      }
    }),
  );
}
process.stdout.write(JSON.stringify({ waves, statuses }));
