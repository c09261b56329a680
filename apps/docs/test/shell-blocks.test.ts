// Every shell block of every guide and README is run by a test: this file holds the list of which test
// runs which block and fails, naming the page and line, on a `sh` block no test claims (a new command in
// a page fails here until a test runs it, or the page shows it as `console` with a one-line
// `<!-- shown, not run: why -->` above it). A claim must name a test file that quotes the block's first
// words (or, for a guide run whole, the guide's name), and must still match a block.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Snippet } from '../src/site/fences.js';
import { docsRoot } from './helpers/build-site.js';
import { documentedFiles, shellBlocksOf } from './helpers/markdown-shell.js';

interface Claim {
  file: string;
  /** The block's first characters; absent: every shell block of the file. */
  start?: string;
  /** The test file (in apps/docs/test) that runs it. */
  by: string;
  /** For a guide run whole: the name its test loads it by. */
  guide?: string;
}

/**
 * Blocks no test runs yet, each with what running it needs. This list may only shrink (it is empty now):
 * the test below pins it, so a new block cannot be parked here without this file's change saying so.
 */
const notYetRun: ReadonlyArray<Claim & { needs: string }> = [];

const g = (name: string) => `apps/docs/guides/${name}.md`;
const claims: Claim[] = [
  {
    file: g('01-quick-start'),
    start: 'npx tsx --env-file=.env first-call.mts',
    by: 'quick-start.test.ts',
    guide: 'quick-start',
  },
  {
    file: g('05-certification'),
    start: 'npx -p @partner-lending/conformance partner-conformance\n',
    by: 'shell-blocks-mock.test.ts',
  },
  {
    file: g('05-certification'),
    start: 'export PARTNER_CLIENT_ID=your-client-id',
    by: 'shell-blocks-mock.test.ts',
  },
  {
    file: g('05-certification'),
    start: "curl -i -X GET 'https://partner-api.staging.example",
    by: 'shell-blocks-mock.test.ts',
  },
  {
    file: g('05-certification'),
    start: 'npx -p @partner-lending/conformance partner-conformance verify',
    by: 'shell-blocks-service.test.ts',
  },
  {
    file: g('06-mock'),
    start: 'npx -p @partner-lending/mock partner-mock --json',
    by: 'shell-blocks-mock.test.ts',
  },
  {
    file: g('06-mock'),
    start: 'npx -p @partner-lending/mock partner-mock --port 8080',
    by: 'shell-blocks-mock.test.ts',
  },
  { file: g('10-fleet'), start: 'openssl rand -base64 32', by: 'shell-blocks-mock.test.ts' },
  { file: g('11-certify-your-integration'), start: '#!/bin/sh', by: 'shell-blocks-mock.test.ts' },
  { file: g('11-certify-your-integration'), start: 'chmod +x journey.sh', by: 'shell-blocks-mock.test.ts' },
  {
    file: g('11-certify-your-integration'),
    start: 'npx -p @partner-lending/conformance partner-conformance client --judge',
    by: 'shell-blocks-mock.test.ts',
  },
  { file: g('12-certify-from-any-ci'), by: 'certify-guide.test.ts', guide: 'certify-from-any-ci' },
  ...[
    'partner-certification-service admin add-partner',
    "cat > plan.json <<'JSON'",
    'export DATABASE_URL=postgres://certify:…',
    'partner-certification-service serve --journal-dir',
    'openssl genpkey -algorithm ed25519',
    'partner-certification-service admin add-register-reader',
    'partner-certification-service admin add-webhook',
    'export OTEL_EXPORTER_OTLP_ENDPOINT=',
  ].map((start) => ({
    file: g('13-operate-the-certification-service'),
    start,
    by: 'shell-blocks-service.test.ts',
  })),
  {
    file: g('14-review-and-approve'),
    start: 'partner-conformance verify run.attestation.json',
    by: 'shell-blocks-service.test.ts',
  },
  {
    file: g('15-from-staging-to-production'),
    by: 'production-guide.test.ts',
    guide: 'from-staging-to-production',
  },
  {
    file: 'README.md',
    start: 'PARTNER_CLIENT_ID=… PARTNER_CLIENT_SECRET=…',
    by: 'shell-blocks-mock.test.ts',
  },
  {
    file: 'README.md',
    start: 'npx -p @partner-lending/conformance partner-conformance client --certify',
    by: 'shell-blocks-mock.test.ts',
  },
  {
    file: 'README.md',
    start: 'node packages/mock/bin/partner-mock.js --json',
    by: 'shell-blocks-mock.test.ts',
  },
  {
    file: 'packages/certification-service/README.md',
    start: 'partner-certification-service admin add-partner',
    by: 'shell-blocks-service.test.ts',
  },
  {
    file: 'packages/certification-service/README.md',
    start: 'run=$(curl -sS --fail-with-body',
    by: 'shell-blocks-service.test.ts',
  },
  {
    file: 'packages/conformance/README.md',
    start: 'npx @partner-lending/conformance ',
    by: 'shell-blocks-mock.test.ts',
  },
  {
    file: 'packages/conformance/README.md',
    start: 'npx -p @partner-lending/conformance partner-conformance client --certify',
    by: 'shell-blocks-mock.test.ts',
  },
  { file: 'README.md', start: 'pnpm pack:local sdk mock', by: 'readme-pack.test.ts' },
  {
    file: 'packages/conformance/README.md',
    start: 'npx -p @partner-lending/conformance partner-conformance verify run.attestation.json',
    by: 'shell-blocks-approved.test.ts',
  },
  { file: 'packages/mock/README.md', start: 'set -o pipefail', by: 'shell-blocks-approved.test.ts' },
];

/** Each block no claim matches, as `file:line: first line`; each claim matching no block. */
function unclaimed(
  blocks: readonly Snippet[],
  list: readonly Claim[],
): { blocks: string[]; claims: string[] } {
  const matches = (claim: Claim, block: Snippet) =>
    claim.file === block.file && (claim.start === undefined || block.code.startsWith(claim.start));
  return {
    blocks: blocks
      .filter((block) => !list.some((claim) => matches(claim, block)))
      .map((block) => `${block.file}:${block.line}: ${block.code.split('\n')[0]}`),
    claims: list
      .filter((claim) => !blocks.some((block) => matches(claim, block)))
      .map((claim) => `${claim.file}: ${claim.start ?? '(every block)'} → ${claim.by}`),
  };
}

const blocks = (await Promise.all(documentedFiles().map((file) => shellBlocksOf(file)))).flat();

describe('every shell block of every guide and README is run by a test', () => {
  it('finds the pages: every guide, the root README and the packages’ READMEs', () => {
    const files = documentedFiles();
    expect(files).toContain('README.md');
    expect(files).toContain('packages/certification-service/README.md');
    expect(files.filter((file) => file.startsWith('apps/docs/guides/')).length).toBeGreaterThanOrEqual(15);
    expect(blocks.length).toBeGreaterThan(30);
  });

  it('no sh block is left unclaimed, and no claim is stale', () => {
    const { blocks: left, claims: stale } = unclaimed(blocks, [...claims, ...notYetRun]);
    expect(
      left,
      `a shell block no test runs: run it in a test and claim it here, or show it as console with <!-- shown, not run: why -->`,
    ).toEqual([]);
    expect(stale, 'a claim that matches no block any more').toEqual([]);
  });

  it('every block is run: none is left not yet run, and without its claim a block is reported (control)', () => {
    for (const block of notYetRun)
      console.warn(`not yet run: ${block.file}: ${block.start} — needs ${block.needs}`);
    expect(notYetRun).toEqual([]);
    // Control: the three blocks claimed last (they were the last not yet run), each with its claim
    // taken away, are reported again with their file and line.
    const lastThree = claims.slice(-3);
    const { blocks: left } = unclaimed(
      blocks,
      claims.filter((claim) => !lastThree.includes(claim)),
    );
    expect(left.map((line) => line.replace(/:\d+: .*/, ''))).toEqual([
      'README.md',
      'packages/conformance/README.md',
      'packages/mock/README.md',
    ]);
    for (const [index, claim] of lastThree.entries()) {
      expect(left[index]).toMatch(new RegExp(`^${claim.file}:\\d+: `));
      expect(left[index]).toContain(claim.start!);
    }
  });

  it('each claim names a test file that quotes the block (or loads the guide run whole)', () => {
    const missing = claims.flatMap((claim) => {
      let source: string;
      try {
        source = readFileSync(join(docsRoot, 'test', claim.by), 'utf8');
      } catch {
        return [`${claim.file}: ${claim.by} does not exist`];
      }
      const quoted = claim.guide ?? claim.start!;
      return source.includes(quoted.replace(/\n$/, ''))
        ? []
        : [`${claim.file}: ${claim.by} never names ${JSON.stringify(quoted)}`];
    });
    expect(missing).toEqual([]);
  });

  it('control: a block added to a page, and a claim whose block went away, are each reported with file and line', () => {
    const added: Snippet = {
      file: 'README.md',
      line: 42,
      codeLine: 43,
      language: 'sh',
      flags: [],
      code: 'rm -rf build\n',
    };
    const claimed = blocks.find(
      (block) => block.file === claims[0]!.file && block.code.startsWith(claims[0]!.start!),
    )!;
    const gone: Claim = { file: 'README.md', start: 'no such command', by: 'shell-blocks-mock.test.ts' };
    const { blocks: left, claims: stale } = unclaimed([claimed, added], [claims[0]!, gone]);
    expect(left).toEqual(['README.md:42: rm -rf build']);
    expect(stale).toEqual(['README.md: no such command → shell-blocks-mock.test.ts']);
  });
});
