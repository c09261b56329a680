import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  type ErrorCase,
  type ErrorFamily,
  errorClassProblems,
  strayErrorLines,
} from '../../../test-support/built-errors.js';
import { sourceFiles } from '../../../test-support/layers.js';
import * as service from '../src/index.js';
import { ServiceError, type ServiceErrorCode } from '../src/index.js';

// One error family: every error class the service exports extends ServiceError, is named after itself and
// carries a code of ServiceErrorCode; no source file declares a class on Error itself or throws a
// TypeError or RangeError (a usage error is a UsageError).

/** Every code, once: a code added to the union and not here (or here and not in it) fails the typecheck. */
const codes: Record<ServiceErrorCode, true> = {
  ERR_CONFIG: true,
  ERR_STORAGE: true,
  ERR_STORAGE_IN_USE: true,
  ERR_SIGNING_KEY: true,
  ERR_STORAGE_UNAVAILABLE: true,
  ERR_USAGE: true,
  ERR_JUDGING_UNAVAILABLE: true,
  ERR_RUN_REFUSED: true,
  ERR_RUN_CLOSED: true,
  ERR_DECISION_REFUSED: true,
  ERR_APPROVAL_IN_FORCE: true,
  ERR_REGISTER_POLL_REFUSED: true,
  ERR_EVIDENCE_REQUEST: true,
  ERR_EVIDENCE_LEASE_LOST: true,
  ERR_OIDC_DISCOVERY: true,
  ERR_SECRETS_KEY: true,
  ERR_INTERNAL: true,
};
const family: ErrorFamily = { base: 'ServiceError', codes: Object.keys(codes) };

const cases: Record<string, ErrorCase> = {
  ServiceError: { args: ['ERR_CONFIG', 'message'], code: 'ERR_CONFIG' },
  StorageUnavailableError: {
    args: ['127.0.0.1:5432', new Error('refused')],
    code: 'ERR_STORAGE_UNAVAILABLE',
  },
  UsageError: { args: ['message'], code: 'ERR_USAGE' },
  InternalError: { args: ['message'], code: 'ERR_INTERNAL' },
  JudgingUnavailableError: { args: ['message', 5], code: 'ERR_JUDGING_UNAVAILABLE' },
  RunRefusal: { args: [409, 'Conflict', 'message'], code: 'ERR_RUN_REFUSED' },
  RunClosedError: { args: [], code: 'ERR_RUN_CLOSED' },
  DecisionRefusal: { args: ['message', {}], code: 'ERR_DECISION_REFUSED' },
  ChangeRefusal: { args: [429, 1, 'message'], code: 'ERR_REGISTER_POLL_REFUSED' },
  OtlpRequestError: { args: ['message'], code: 'ERR_EVIDENCE_REQUEST' },
  EvidenceLeaseLost: { args: ['ptn_1'], code: 'ERR_EVIDENCE_LEASE_LOST' },
};

/** The base's own line. */
const base = 'src/errors.ts: export class ServiceError extends Error {';

/**
 * Where a plain `new Error(` stays: the reason a socket is destroyed with or the cause a
 * StorageUnavailableError carries (never thrown on its own), a database error rebuilt from the embedded
 * thread (its SQLSTATE `code` kept), and files other changes hold now. `file: words` allows the lines of
 * `file` holding `words`.
 */
const plainAllowed = [
  'src/recording/drain.ts: answered calls wait for the database',
  'src/recording/drain.ts: answered calls could not be recorded',
  'src/db/embedded.ts: the database thread exited with code',
  'src/db/embedded.ts: Object.assign(new Error(String(message.error.message)), message.error)',
  'src/db/postgres.ts: the connection holding its serving lock was lost',
  'src/production/webhooks/deliver.ts: no connection within',
  'src/production/webhooks/deliver.ts: no complete response within',
];
const plainErrors = (files: Record<string, string>) =>
  Object.entries(files).flatMap(([file, text]) =>
    text
      .split('\n')
      .flatMap((line, index) =>
        /\bnew Error\(/.test(line) &&
        !/^\s*(\/\/|\*)/.test(line) &&
        !plainAllowed.some(
          (allow) =>
            allow === file || (allow.startsWith(`${file}: `) && line.includes(allow.slice(file.length + 2))),
        )
          ? [`${file}:${index + 1}: ${line.trim()}`]
          : [],
      ),
  );

const packageDir = fileURLToPath(new URL('..', import.meta.url));
const sources = Object.fromEntries(
  sourceFiles(fileURLToPath(new URL('../src', import.meta.url))).map((file) => [
    relative(packageDir, file),
    readFileSync(file, 'utf8'),
  ]),
);

describe('the service’s error family', () => {
  it('every exported error class is a ServiceError named after itself, with a code of ServiceErrorCode', () => {
    const { checked, problems } = errorClassProblems('src', service, cases, family);
    expect(problems).toEqual([]);
    expect(checked).toHaveLength(Object.keys(cases).length);
  });

  it('a class on plain Error fails it (negative control)', () => {
    class Stray extends Error {}
    class Coded extends ServiceError {
      constructor() {
        super('ERR_NOT_A_CODE' as ServiceErrorCode, 'message');
        this.name = 'Coded';
      }
    }
    const { problems } = errorClassProblems(
      'src',
      { ...service, Stray, Coded },
      {
        ...cases,
        Stray: { args: ['message'], code: 'ERR_USAGE' },
        Coded: { args: [], code: 'ERR_NOT_A_CODE' },
      },
      family,
    );
    expect(problems).toEqual([
      'src: new Stray(…).name is "Error"',
      'src: new Stray(…).code is undefined, expected ERR_USAGE',
      'src: String(new Stray(…)) is "Error: message"',
      'src: new Stray(…) is not a ServiceError',
      'src: new Stray(…).code undefined is not a code of ServiceError',
      'src: new Coded(…).code "ERR_NOT_A_CODE" is not a code of ServiceError',
    ]);
  });

  it('no source file declares an error class on Error itself, or throws a TypeError or RangeError', () => {
    expect(strayErrorLines(sources, [base])).toEqual([]);
  });

  it('no source file throws a plain Error, but for the causes and files named', () => {
    expect(plainErrors(sources)).toEqual([]);
    // Negative control: a plain Error planted in a file of the family is found.
    expect(
      plainErrors({ 'src/secrets.ts': "    throw new Error('not a sealed value of this service');" }),
    ).toEqual(["src/secrets.ts:1: throw new Error('not a sealed value of this service');"]);
  });

  it('the source check finds them (negative control)', () => {
    const planted = {
      ...sources,
      'src/planted.ts': [
        'export class Stray extends Error {}',
        "  throw new TypeError('--name takes 1 to 100 characters');",
        '// a comment that says extends Error is not code',
      ].join('\n'),
    };
    expect(strayErrorLines(planted, [base])).toEqual([
      'src/planted.ts:1: export class Stray extends Error {}',
      "src/planted.ts:2: throw new TypeError('--name takes 1 to 100 characters');",
    ]);
  });
});
