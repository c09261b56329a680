import { describe, expect, it } from 'vitest';
import { parseFlags } from '../../src/cli/io.js';

const flags = {
  audience: { type: 'string' },
  certify: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

const messageOf = (args: string[], positionals = false) => {
  try {
    parseFlags(args, flags, 'partner-conformance', positionals);
    return 'no error';
  } catch (error) {
    return `${(error as { code: string }).code}: ${(error as Error).message}`;
  }
};

describe('parseFlags', () => {
  it("tells parseArgs' errors apart by their code and names the argument at fault", () => {
    expect(messageOf(['--certify', '--bogus=1'])).toBe(
      'ERR_USAGE: unknown option --bogus; run partner-conformance --help for the flags',
    );
    expect(messageOf(['-x'])).toBe(
      'ERR_USAGE: unknown option -x; run partner-conformance --help for the flags',
    );
    expect(messageOf(['--audience', 'https://api', 'extra'])).toBe(
      'ERR_USAGE: unexpected argument "extra"; run partner-conformance --help for the flags',
    );
    expect(messageOf(['--audience'])).toBe(
      'ERR_USAGE: --audience needs a value (for a value starting with "-", write --audience=VALUE)',
    );
    expect(messageOf(['--audience', '--certify'])).toBe(
      'ERR_USAGE: --audience needs a value (for a value starting with "-", write --audience=VALUE)',
    );
  });

  it('passes what is well formed, positionals only where allowed', () => {
    expect(messageOf(['--audience=-x', '--certify', '-h'])).toBe('no error');
    expect(messageOf(['journey.sh'], true)).toBe('no error');
    expect(parseFlags(['--audience', 'https://api'], flags, 'x', false).values.audience).toBe('https://api');
  });
});
