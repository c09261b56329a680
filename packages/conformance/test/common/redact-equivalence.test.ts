// `Redactor.redact` was made cheaper (its steps skipped when the text cannot hold a match); its output
// must not change. This holds it to the implementation before, frozen in redact-before.mjs, over generated sequences
// of registrations and texts that embed the registered secrets in every encoding a client may use.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Redactor, shorten } from '../../src/common/redact.js';
import { type Mutation, RedactorBefore } from './redact-before.mjs';

// redact-before.mjs also breaks the reference on purpose (`Mutation`): each negative control below shows
// the property catches it (so the generators reach what the optimisation must keep).

// ---- Generators: a run's credentials and tokens, then registrations and texts built from them.
const base64url = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const fromChars = (chars: string, minLength: number, maxLength: number) =>
  fc.array(fc.constantFrom(...chars), { minLength, maxLength }).map((list) => list.join(''));
/** Characters a client must or may encode, and a few that the steps' own patterns look for. */
const awkward = [
  ' ',
  '+',
  '/',
  '=',
  '%',
  '&',
  ':',
  '?',
  '#',
  '.',
  '-',
  '_',
  '$',
  'é',
  '😀',
  '…',
  'e',
  'y',
  'J',
];
const awkwardString = (minLength: number, maxLength: number) =>
  fc
    .array(fc.oneof(fc.constantFrom(...awkward), fc.constantFrom(...base64url)), { minLength, maxLength })
    .map((list) => list.join(''));

const clientIdArb = fc.oneof(
  fromChars('0123456789abcdef', 16, 16).map((hex) => `cert-${hex}`),
  awkwardString(0, 10),
);
const secretArb = (id: string) =>
  fc.oneof(
    fromChars(base64url, 32, 32),
    awkwardString(0, 14),
    // A passphrase: spaces, which a client may send as '+', and characters form-encoding escapes.
    fc.array(awkwardString(1, 5), { minLength: 2, maxLength: 4 }).map((words) => words.join(' ')),
    // A secret holding the client id: the longer must be replaced whole.
    fc.tuple(awkwardString(0, 4), awkwardString(0, 4)).map(([a, b]) => `${a}${id}${b}`),
  );
const jwtShaped = fc
  .tuple(fromChars(base64url, 4, 20), fromChars(base64url, 0, 20), fc.option(fromChars(base64url, 0, 12)))
  .map(
    ([header, payload, signature]) => `eyJ${header}.${payload}${signature === null ? '' : `.${signature}`}`,
  );
const tokensArb = fc
  .tuple(
    fromChars(base64url, 4, 16),
    fc.array(fc.oneof(fromChars(base64url, 5, 24), jwtShaped), { maxLength: 3 }),
  )
  // An opaque token, one that contains it, and JWT-shaped or opaque others (some under 8 characters).
  .map(([opaque, others]) => [`opaque-${opaque}`, `${opaque}`, `x-opaque-${opaque}-long`, ...others]);
const placeholderArb = fc.constantFrom(
  '[client_secret]',
  '[client_id]',
  '$PARTNER_CLIENT_SECRET',
  '[x]',
  '$&',
  '',
);

interface Universe {
  id: string;
  secret: string;
  tokens: string[];
}
const universeArb: fc.Arbitrary<Universe> = clientIdArb.chain((id) =>
  fc.record({ id: fc.constant(id), secret: secretArb(id), tokens: tokensArb }),
);

const hexByte = (byte: number, upper: [boolean, boolean]) => {
  const [a, b] = byte.toString(16).padStart(2, '0');
  return `%${upper[0] ? a!.toUpperCase() : a}${upper[1] ? b!.toUpperCase() : b}`;
};
/** Each character literal, percent-encoded (hex case mixed) or, for a space, '+'. */
const percentMixed = (value: string) =>
  fc
    .array(fc.tuple(fc.nat(2), fc.boolean(), fc.boolean()), {
      minLength: [...value].length,
      maxLength: [...value].length,
    })
    .map((choices) =>
      [...value]
        .map((char, i) => {
          const [how, upperA, upperB] = choices[i]!;
          if (how === 0) return char;
          if (how === 2 && char === ' ') return '+';
          return [...Buffer.from(char, 'utf8')].map((byte) => hexByte(byte, [upperA, upperB])).join('');
        })
        .join(''),
    );
/** Every other character literal, each space ' ' or '+' (a client form-encoding spaces only). */
const plusMixed = (value: string) =>
  fc
    .array(fc.boolean(), { minLength: value.length, maxLength: value.length })
    .map((plus) => [...value].map((char, i) => (char === ' ' && plus[i] ? '+' : char)).join(''));
const formEncoded = (value: string) => new URLSearchParams({ v: value }).toString().slice(2);
const basicForms = (id: string, secret: string) =>
  [
    `${id}:${secret}`,
    `${formEncoded(id)}:${formEncoded(secret)}`,
    `${encodeURIComponent(id)}:${encodeURIComponent(secret)}`,
  ].flatMap((pair) => {
    const base64 = Buffer.from(pair, 'utf8').toString('base64');
    return [base64, base64.replace(/=+$/, ''), Buffer.from(pair, 'utf8').toString('base64url')];
  });

const fragmentArb = (u: Universe): fc.Arbitrary<string> => {
  const whole = fc.oneof(
    fc.constantFrom(u.id, u.secret),
    fc.constantFrom(u.id, u.secret).chain(percentMixed),
    fc.constantFrom(u.id, u.secret).chain(plusMixed),
    fc.constantFrom(
      formEncoded(u.id),
      formEncoded(u.secret),
      encodeURIComponent(u.id),
      encodeURIComponent(u.secret),
    ),
    fc.constantFrom(...basicForms(u.id, u.secret)),
    fc.constantFrom(...u.tokens, ...u.tokens.map(shorten)),
    jwtShaped,
    placeholderArb,
    awkwardString(0, 8),
  );
  return fc.oneof(
    { weight: 4, arbitrary: whole },
    // A piece of one (a value cut at the window's edge, a token's head).
    {
      weight: 1,
      arbitrary: fc
        .tuple(whole, fc.nat(40), fc.nat(40))
        .map(([text, a, b]) => text.slice(a % 8, text.length - (b % 8))),
    },
  );
};
const textArb = (u: Universe) => fc.array(fragmentArb(u), { maxLength: 8 }).map((parts) => parts.join(''));

type Op =
  | { kind: 'secret'; value: string; placeholder: string }
  | { kind: 'basic'; placeholder: string }
  | { kind: 'token'; value: string }
  | { kind: 'redact'; text: string };
const opsArb = (u: Universe): fc.Arbitrary<Op[]> =>
  fc.array(
    fc.oneof(
      {
        weight: 1,
        arbitrary: fc.record({
          kind: fc.constant('secret' as const),
          value: fc.constantFrom(u.id, u.secret),
          placeholder: placeholderArb,
        }),
      },
      {
        weight: 1,
        arbitrary: fc.record({ kind: fc.constant('basic' as const), placeholder: placeholderArb }),
      },
      {
        weight: 1,
        arbitrary: fc.record({ kind: fc.constant('token' as const), value: fc.constantFrom(...u.tokens) }),
      },
      { weight: 4, arbitrary: fc.record({ kind: fc.constant('redact' as const), text: textArb(u) }) },
    ),
    { minLength: 1, maxLength: 24 },
  );
/** The registrations a stage or a suite run makes up front, then any further operations. */
const scenarioArb = universeArb.chain((u) => fc.tuple(fc.constant(u), fc.boolean(), opsArb(u)));

function property(mutation?: Mutation) {
  return fc.property(scenarioArb, ([u, upFront, ops]) => {
    const before = new RedactorBefore(mutation);
    const now = new Redactor();
    const all: Op[] = [
      ...(upFront
        ? ([
            { kind: 'secret', value: u.secret, placeholder: '[client_secret]' },
            { kind: 'secret', value: u.id, placeholder: '[client_id]' },
            { kind: 'basic', placeholder: '[client_credentials]' },
            ...u.tokens.map((value) => ({ kind: 'token', value })),
          ] as Op[])
        : []),
      ...ops,
    ];
    for (const op of all) {
      for (const r of [before, now])
        if (op.kind === 'secret') r.addSecret(op.value, op.placeholder);
        else if (op.kind === 'basic') r.addBasicCredentials(u.id, u.secret, op.placeholder);
        else if (op.kind === 'token') r.addToken(op.value);
      if (op.kind === 'redact') expect(now.redact(op.text)).toBe(before.redact(op.text));
    }
  });
}

describe('Redactor.redact: the same output as the implementation before', () => {
  it('for generated registrations and texts (every encoding of the secrets, tokens inside tokens, JWT-shaped text, noise)', () => {
    fc.assert(property(), { numRuns: 1500 });
  });

  it('for a run’s texts that change: the reference redacts something in most generated texts (the property is not vacuous)', () => {
    let changed = 0;
    let total = 0;
    fc.assert(
      fc.property(scenarioArb, ([u, , ops]) => {
        const before = new RedactorBefore();
        before.addSecret(u.secret, '[client_secret]');
        before.addSecret(u.id, '[client_id]');
        before.addBasicCredentials(u.id, u.secret, '[client_credentials]');
        for (const token of u.tokens) before.addToken(token);
        for (const op of ops)
          if (op.kind === 'redact' && op.text !== '') {
            total += 1;
            if (before.redact(op.text) !== op.text) changed += 1;
          }
      }),
      { numRuns: 300, seed: 32 },
    );
    expect(total).toBeGreaterThan(500);
    expect(changed / total).toBeGreaterThan(0.5);
  });

  // Negative controls: the property fails against a reference broken on purpose, each in one way.
  it.each([
    ['secrets replaced shortest first', { shortestFirst: true }],
    ['the order sorted once and never again after a registration', { staleOrder: true }],
    ['tokens replaced newest first (a token containing another)', { tokensNewestFirst: true }],
    ['a per-character pattern run only when the text holds a %', { patternsOnlyWithPercent: true }],
  ] as Array<[string, Mutation]>)('fails against a reference broken on purpose: %s', (_, mutation) => {
    const result = fc.check(property(mutation), { numRuns: 1000, seed: 32 });
    expect(result.failed).toBe(true);
  });
});
