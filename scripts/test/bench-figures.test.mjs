// `pnpm bench:figures` keeps each bench's summary lines: the extraction, and that the benches it runs
// still exist and still print what it looks for (a renamed bench or a reworded verdict would leave the
// figures empty without this).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { missingMarker, sections, summaryLines } from '../bench-figures-lines.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('bench:figures summary lines', () => {
  it('keeps the verdicts and the failover summary blocks, and drops the per-round lines', () => {
    const output = [
      'round 1, local stages, cold: 10000 calls, p50 3.1 ms, p99 40.2 ms',
      'round 1, service embedded, cold (ready 1.20 s after its start): 10000 calls, p99 44.0 ms (+3.8 ms)',
      '',
      'PASS p99 added, embedded cold: +1.2 ms to +3.8 ms, median +2.0 ms over 3 round(s) (target < 5 ms)',
      'FAIL p99 added, postgres cold: +4.1 ms to +9.0 ms, median +6.0 ms over 3 round(s) (target < 5 ms)',
      'HTTP thread CPU per call, service embedded cold / local stages cold: ×1.31, ×1.25 (target ≤ ×1.2)',
      '#1 cluster back 210 ms; 3 more than the baseline',
      '',
      'cluster: 10 failovers, 8 processes × 10 callers + 1 cold 500 ms after the kill, 2-s tokens, 3-s deadline; load average 1.1 at the start, 2.0 at the end',
      "  expired delivered: 0; foreign: 0; crashes: 0 with a listener of the caller's own, 0 without",
      "  back on one shared token after the promotion (the fleet's last process back on Redis): 150–860 ms, within 1 s (every process back) in 10 of 10",
      '',
      'load average 1.2 1.0 0.9',
    ].join('\n');
    expect(summaryLines(output)).toEqual([
      'PASS p99 added, embedded cold: +1.2 ms to +3.8 ms, median +2.0 ms over 3 round(s) (target < 5 ms)',
      'FAIL p99 added, postgres cold: +4.1 ms to +9.0 ms, median +6.0 ms over 3 round(s) (target < 5 ms)',
      'HTTP thread CPU per call, service embedded cold / local stages cold: ×1.31, ×1.25 (target ≤ ×1.2)',
      'cluster: 10 failovers, 8 processes × 10 callers + 1 cold 500 ms after the kill, 2-s tokens, 3-s deadline; load average 1.1 at the start, 2.0 at the end',
      "  expired delivered: 0; foreign: 0; crashes: 0 with a listener of the caller's own, 0 without",
      "  back on one shared token after the promotion (the fleet's last process back on Redis): 150–860 ms, within 1 s (every process back) in 10 of 10",
    ]);
  });

  it('finds nothing in output that states no figure (the control: the extraction is not keeping everything)', () => {
    expect(
      summaryLines('round 1, local stages, warm: 1 calls\nPASSING remark\nload average 1 1 1\n'),
    ).toEqual([]);
  });

  it('every bench it runs exists and still prints the lines it looks for', () => {
    for (const section of sections) {
      const source = readFileSync(join(root, section.cwd, section.script), 'utf8');
      expect({ bench: section.name, missing: missingMarker(section.name, source) }).toEqual({
        bench: section.name,
        missing: undefined,
      });
    }
  });

  it('says what is missing when a bench no longer prints its summary (the control of the check above)', () => {
    expect(missingMarker('cold', "console.log(ok ? 'OK p99' : 'NOT OK p99');")).toBe(
      'a PASS/FAIL verdict line',
    );
    expect(missingMarker('failover', 'console.log(topology + ": done");')).toBe(
      'the "<topology>: N failovers" summary line',
    );
  });
});
