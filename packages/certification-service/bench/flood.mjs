// Partner B's flood, in a process of its own (so that its sending does not share the measured
// process's CPU time): waves of BENCH_FLOOD concurrent `POST /api/runs` until stdin closes (with
// BENCH_FLOOD_MODE=loop, BENCH_FLOOD senders each sending again as soon as answered); each run
// accepted is finished at once (after BENCH_FLOOD_CALLS API calls, 0 by default, so that judging it has
// a session to judge), so that the next wave has room again (accepted and refused creations mixed).
// Prints the statuses it got, as JSON, on exit.
const { FLOOD_URL: url, FLOOD_KEY: key } = process.env;
const size = Number(process.env.BENCH_FLOOD ?? 200);
const calls = Number(process.env.BENCH_FLOOD_CALLS ?? 0);
const mode = process.env.BENCH_FLOOD_MODE === 'loop' ? 'loop' : 'waves';
const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
const statuses = {};
let stop = false;
process.stdin.on('data', () => {});
process.stdin.on('end', () => {
  stop = true;
});

/** A token at the run, then `calls` API calls with it, ten at a time. */
async function journey(run) {
  const token = await (
    await fetch(run.tokenUrl, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: run.clientId,
        client_secret: run.clientSecret,
      }),
    })
  ).json();
  for (let done = 0; done < calls; done += 10)
    await Promise.all(
      Array.from({ length: Math.min(10, calls - done) }, async () => {
        await (
          await fetch(`${run.baseUrl}/v3/partner/${token.partnerId}/loans?limit=5`, {
            headers: { authorization: `Bearer ${token.access_token}` },
          })
        ).text();
      }),
    );
}

/** One creation, counted; an accepted run is finished (after its journey). */
async function create() {
  try {
    const response = await fetch(`${url}/api/runs`, {
      method: 'POST',
      headers,
      body: '{"scenarios":[]}',
    });
    statuses[response.status] = (statuses[response.status] ?? 0) + 1;
    const body = await response.json();
    if (response.status === 201) {
      if (calls > 0) await journey(body);
      await (
        await fetch(`${url}/api/runs/${body.id}/finish`, { method: 'POST', headers, body: '{}' })
      ).text();
    }
  } catch {
    statuses.error = (statuses.error ?? 0) + 1;
  }
}

let waves = 0;
if (mode === 'loop')
  // Each of the `size` senders sends again as soon as it has its answer.
  await Promise.all(
    Array.from({ length: size }, async () => {
      while (!stop) await create();
    }),
  );
else
  while (!stop) {
    waves += 1;
    await Promise.all(Array.from({ length: size }, create));
  }
process.stdout.write(JSON.stringify({ waves, statuses }));
