import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCli, toMockOptions } from '../src/cli-options.js';
import { MockError } from '../src/index.js';

const usage = (argv: string[]) => {
  try {
    parseCli(argv);
  } catch (error) {
    expect(error).toBeInstanceOf(MockError);
    expect((error as MockError).code).toMatch(/^ERR_MOCK_(USAGE|CLIENTS|FAULT)$/);
    return (error as MockError).message;
  }
  throw new Error(`parseCli accepted ${JSON.stringify(argv)}`);
};

describe('cli-options: parseCli and toMockOptions', () => {
  it('hands every numeric flag to startMock under its option name', () => {
    const cli = parseCli([
      '--port=4001',
      '--auth-port',
      '4002',
      '--ttl',
      '60',
      '--leeway',
      '5',
      '--max-stored',
      '7',
      '--max-stored-per-partner',
      '3',
      '--max-stored-bytes',
      '1000',
      '--request-timeout',
      '2500',
      '--headers-timeout',
      '1500',
      '--profile',
      'rfc9068',
      '--fault',
      'api-ignore-scope',
      '--json',
    ]);
    expect(toMockOptions(cli)).toEqual({
      profile: 'rfc9068',
      faults: ['api-ignore-scope'],
      apiPort: 4001,
      authPort: 4002,
      tokenTtlSeconds: 60,
      leewaySeconds: 5,
      maxStored: 7,
      maxStoredPerPartner: 3,
      maxStoredBytes: 1000,
      requestTimeoutMs: 2500,
      headersTimeoutMs: 1500,
    });
    expect(cli.json).toBe(true);
    expect(toMockOptions(parseCli([]))).toEqual({ profile: 'deployed', faults: [] });
  });

  it.each([
    [['--port', '-1'], '--port must be an integer from 0 to 65535, got "-1".'],
    [['--port=-1'], '--port must be an integer from 0 to 65535, got "-1".'],
    [['--port', '65536'], '--port must be an integer from 0 to 65535, got "65536".'],
    [['--port', '1e3'], '--port must be an integer from 0 to 65535, got "1e3".'],
    [['--port', ''], '--port must be an integer from 0 to 65535, got "".'],
    [['--port'], '--port needs a value: an integer from 0 to 65535.'],
    [['--port', '--json'], '--port needs a value: an integer from 0 to 65535.'],
    [['--max-stored', '-5'], '--max-stored must be an integer from 0 to 10000000, got "-5".'],
    [['--request-timeout', '0'], '--request-timeout must be an integer from 1 to 3600000, got "0".'],
    [['--ttl', 'x'.repeat(100)], `--ttl must be an integer from 1 to 315360000, got "${'x'.repeat(40)}…".`],
    [['-x'], "Unknown option '-x'. Run partner-mock --help for the options."],
    [['stray'], "Unexpected argument 'stray'. Run partner-mock --help for the options."],
  ])('refuses %j with a message saying what is expected', (argv, message) => {
    expect(usage(argv)).toBe(message);
  });

  it.each([
    [['--clients', 'https://user:hunter2@example.invalid/c.json'], '--clients'],
    [['--clients=https://user:hunter2@example.invalid/c.json'], '--clients'],
    [['--fault', 'http://u:hunter2@x'], '--fault'],
    [['--unknown=https://u:hunter2@x'], 'an argument'],
    [['ftp://u:hunter2@x/'], 'an argument'],
  ])('refuses a URL with credentials in %j without echoing it', (argv, name) => {
    const message = usage(argv);
    expect(message).toBe(
      `${name} holds a URL with credentials (user:password@), which is refused and not shown. Keep passwords out of command lines.`,
    );
    expect(message).not.toContain('hunter2');
  });

  describe('--profile production', () => {
    const dir = mkdtempSync(join(tmpdir(), 'partner-mock-cli-'));
    const keyFile = join(dir, 'register.key');
    writeFileSync(keyFile, '  rr_0123456789abcdef\n');
    const clientsFile = join(dir, 'clients.json');
    writeFileSync(
      clientsFile,
      JSON.stringify([
        {
          partnerId: 'ptn_1',
          clientId: 'prod-1',
          clientSecret: 'secret-1',
          authorizedScopes: ['read:loans'],
        },
      ]),
    );
    const emptyKey = join(dir, 'empty.key');
    writeFileSync(emptyKey, '\n');
    const keyDir = join(dir, 'key-dir');
    mkdirSync(keyDir);
    const base = ['--profile', 'production', '--clients', clientsFile];

    it('hands the register, its key (read from the file, trimmed) and the JWKS to startMock', () => {
      const options = toMockOptions(
        parseCli([
          ...base,
          '--register',
          'https://certify.example/register',
          '--register-key-file',
          keyFile,
          '--register-jwks',
          'https://keys.example/jwks.json',
        ]),
      );
      expect(options.register).toEqual({
        url: 'https://certify.example/register',
        key: 'rr_0123456789abcdef',
        jwksUrl: 'https://keys.example/jwks.json',
      });
      expect(options.profile).toBe('production');
      const noJwks = toMockOptions(
        parseCli([...base, '--register', 'https://certify.example/register', '--register-key-file', keyFile]),
      );
      expect(noJwks.register).not.toHaveProperty('jwksUrl');
      expect(noJwks.register).not.toHaveProperty('lookup');
      const perPartner = toMockOptions(
        parseCli([
          ...base,
          '--register',
          'https://certify.example/register',
          '--register-key-file',
          keyFile,
          '--register-lookup',
          'partner',
        ]),
      );
      expect(perPartner.register).toMatchObject({ lookup: 'partner' });
      expect(perPartner.register).not.toHaveProperty('stateFile');
      expect(perPartner.register).not.toHaveProperty('clockSkewSeconds');
    });

    it('hands --register-state and --register-clock-skew to startMock', () => {
      const options = toMockOptions(
        parseCli([
          ...base,
          '--register',
          'https://certify.example/register',
          '--register-key-file',
          keyFile,
          '--register-state',
          join(dir, 'state.json'),
          '--register-clock-skew',
          '5',
        ]),
      );
      expect(options.register).toMatchObject({ stateFile: join(dir, 'state.json'), clockSkewSeconds: 5 });
    });

    it.each([
      [
        ['--profile', 'production', '--clients', clientsFile],
        /needs --register URL .* and --register-key-file FILE/,
      ],
      [
        [
          '--profile',
          'production',
          '--register',
          'https://c.example/register',
          '--register-key-file',
          keyFile,
        ],
        /needs --clients FILE/,
      ],
      [['--register', 'https://c.example/register'], /^--register is for --profile production only\.$/],
      [['--register-jwks', 'https://c.example/jwks'], /^--register-jwks is for --profile production only\.$/],
      [['--register-lookup', 'partner'], /^--register-lookup is for --profile production only\.$/],
      [['--register-state', 'state.json'], /^--register-state is for --profile production only\.$/],
      [
        [
          ...base,
          '--register',
          'https://c.example/register',
          '--register-key-file',
          keyFile,
          '--register-clock-skew',
          '-1',
        ],
        /^--register-clock-skew must be an integer from 0 to 3600, got "-1"\.$/,
      ],
      [
        [
          ...base,
          '--register',
          'https://c.example/register',
          '--register-key-file',
          keyFile,
          '--register-lookup',
          'one',
        ],
        /^--register-lookup must be register or partner, got "one"\.$/,
      ],
      [
        [...base, '--register', 'c.example/register', '--register-key-file', keyFile],
        /--register must be an http\(s\) URL/,
      ],
      [
        [...base, '--register', 'https://c.example/register', '--register-key-file', emptyKey],
        /must hold the register reader key alone/,
      ],
      [
        [...base, '--register', 'https://c.example/register', '--register-key-file', keyDir],
        /is a directory, not a regular file/,
      ],
      [
        [...base, '--register', 'https://c.example/register', '--register-key-file', join(dir, 'absent')],
        /cannot read the register key file .*: ENOENT/,
      ],
      [['--profile', 'staging'], /--profile must be one of deployed, rfc9068, production, got "staging"\./],
    ])('refuses %j', (argv, message) => {
      expect(usage(argv as string[])).toMatch(message);
    });

    describe('--evidence and --operator-key-file', () => {
      const registerArgs = [
        ...base,
        '--register',
        'https://c.example/register',
        '--register-key-file',
        keyFile,
      ];
      const evidenceKey = join(dir, 'evidence.key');
      writeFileSync(evidenceKey, 'er_evidence_reporter_key_0123\n');
      const fingerprintKey = join(dir, 'fingerprint.key');
      writeFileSync(fingerprintKey, 'fk_0123456789abcdef0123456789abcdef\n');
      const shortKey = join(dir, 'short.key');
      writeFileSync(shortKey, 'short\n');
      const operatorKey = join(dir, 'operator.key');
      writeFileSync(operatorKey, 'op_operator_key_0123456789\n');

      it('hands the evidence flags to startMock, the keys read from their files', () => {
        const options = toMockOptions(
          parseCli([
            ...registerArgs,
            '--evidence',
            'https://certify.example/evidence',
            '--evidence-key-file',
            evidenceKey,
            '--evidence-spool',
            join(dir, 'evidence.spool'),
            '--evidence-spool-bytes',
            '1048576',
            '--evidence-buffer',
            '500',
            '--evidence-fingerprint-key-file',
            fingerprintKey,
            '--operator-key-file',
            operatorKey,
          ]),
        );
        expect(options.evidence).toEqual({
          url: 'https://certify.example/evidence',
          key: 'er_evidence_reporter_key_0123',
          spoolFile: join(dir, 'evidence.spool'),
          spoolMaxBytes: 1048576,
          bufferRecords: 500,
          fingerprintKey: 'fk_0123456789abcdef0123456789abcdef',
        });
        expect(options.operatorKey).toBe('op_operator_key_0123456789');
        // Control: without --evidence there is no report, and the operator control works in any profile.
        expect(toMockOptions(parseCli(registerArgs))).not.toHaveProperty('evidence');
        expect(toMockOptions(parseCli(['--operator-key-file', operatorKey])).operatorKey).toBe(
          'op_operator_key_0123456789',
        );
      });

      it.each([
        [['--evidence', 'https://c.example/evidence'], /^--evidence is for --profile production only\.$/],
        [
          [...registerArgs, '--evidence', 'https://c.example/evidence'],
          /^--evidence needs --evidence-key-file FILE \(an evidence reporter key from partner-certification-service admin add-evidence-reporter\)\.$/,
        ],
        [
          [...registerArgs, '--evidence-spool', 'x.spool'],
          /^--evidence-spool needs --evidence URL \(the certification service's evidence endpoint\)\.$/,
        ],
        [
          [...registerArgs, '--evidence', 'ftp://c.example/evidence', '--evidence-key-file', evidenceKey],
          /^--evidence must be an http\(s\) URL, got "ftp:\/\/c\.example\/evidence"\.$/,
        ],
        [
          [
            ...registerArgs,
            '--evidence',
            'https://c.example/e',
            '--evidence-key-file',
            evidenceKey,
            '--evidence-buffer',
            '0',
          ],
          /^--evidence-buffer must be an integer from 1 to 10000000, got "0"\.$/,
        ],
        [
          [...registerArgs, '--evidence', 'https://c.example/e', '--evidence-key-file', keyDir],
          /^the evidence key file .* is a directory, not a regular file/,
        ],
        [
          [
            ...registerArgs,
            '--evidence',
            'https://c.example/e',
            '--evidence-key-file',
            evidenceKey,
            '--evidence-fingerprint-key-file',
            shortKey,
          ],
          /^the fingerprint key file .* holds a key of 5 characters; it needs at least 32\.$/,
        ],
        [
          ['--operator-key-file', shortKey],
          /^the operator key file .* holds a key of 5 characters; it needs at least 16\.$/,
        ],
        [['--operator-key-file', join(dir, 'absent')], /^cannot read the operator key file .*: ENOENT/],
      ])('refuses %j', (argv, message) => {
        expect(usage(argv as string[])).toMatch(message);
      });
    });

    it('never echoes the key', () => {
      const secretKey = join(dir, 'two-words.key');
      writeFileSync(secretKey, 'rr_secret_part another_word');
      const message = usage([
        ...base,
        '--register',
        'https://c.example/register',
        '--register-key-file',
        secretKey,
      ]);
      expect(message).not.toContain('rr_secret_part');
    });
  });
});
