import { databaseGauge } from '../observability/metrics.js';

const runStates = ['open', 'closing', 'judged', 'interrupted'] as const;

/** Registers the runs' gauges (once): `certification_runs`, the runs by state, read at each scrape. */
export function registerRunMetrics(): void {
  databaseGauge({
    name: 'certification_runs',
    help: 'Runs in the database by state (open, closing, judged, interrupted), read at each scrape.',
    labelNames: ['state'],
    async read(db, set) {
      const rows = await db.query<{ status: string; count: string }>(
        'SELECT status, count(*) AS count FROM runs GROUP BY status',
      );
      for (const state of runStates)
        set(Number(rows.find((row) => row.status === state)?.count ?? 0), { state });
    },
  });
}
