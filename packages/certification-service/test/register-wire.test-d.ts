// The register this service signs is the one the production gate parses: the entries it builds and the
// payload it signs are the mock's wire types (`pnpm typecheck` checks this file; vitest does not run it).
import type {
  RegisterEntry,
  RegisterEntryStatus,
  RegisterPayload,
  registerStatuses,
} from '@partner-lending/mock';
import { expectTypeOf } from 'vitest';
import type { registerEntries, signRegister } from '../src/production/register/register.js';

type SignedEntry = Awaited<ReturnType<typeof registerEntries>>[number];
type SignedPayload = Parameters<typeof signRegister>[1];
/** What the gate keeps of each partner once it verified a copy (the mock's register-document.ts). */
type ParsedEntry = RegisterEntry;

expectTypeOf<SignedEntry>().toExtend<ParsedEntry>();
expectTypeOf<SignedEntry>().toEqualTypeOf<RegisterEntry>();
expectTypeOf<SignedPayload>().toEqualTypeOf<RegisterPayload>();
expectTypeOf<SignedEntry['status']>().toEqualTypeOf<RegisterEntryStatus>();
expectTypeOf<(typeof registerStatuses)[number]>().toEqualTypeOf<RegisterEntryStatus>();

// Negative controls: an entry the gate would refuse is not one the service can sign.
const entry: SignedEntry = {
  partnerId: 'ptn_1',
  name: 'Acme',
  status: 'active',
  scopes: ['read:loans'],
  validUntil: null,
  decisionId: '1',
};
// @ts-expect-error a status the gate does not know
const pending: SignedEntry = { ...entry, status: 'pending' };
// @ts-expect-error an entry without its decision
const undecided: SignedEntry = {
  partnerId: 'ptn_1',
  name: 'Acme',
  status: 'active',
  scopes: [],
  validUntil: null,
};
// @ts-expect-error a field renamed on one side only
expectTypeOf<Omit<SignedEntry, 'partnerId'> & { partner: string }>().toExtend<ParsedEntry>();
void [pending, undecided];
