import { UsageError } from '../errors.js';
/** The event types the service sends, in the Standard Webhooks `{type, timestamp, data}` body. */
export const webhookEventTypes = [
  'partner.approved',
  'partner.rejected',
  'partner.revoked',
  'approval.expiring',
  'approval.expired',
  'run.judged',
  'partner.regressed',
  'partner.suspended',
  'partner.reinstated',
] as const;

export type WebhookEventType = (typeof webhookEventTypes)[number];

/** What an event's `data` holds, as it applies. */
export interface WebhookEventData {
  partnerId: string;
  runId?: string;
  decisionId?: string;
  scopes?: string[];
  validUntil?: string | null;
  note?: string;
  verdict?: string | null;
  [extra: string]: unknown;
}

/** The event type of a decision. */
export const eventOfDecision = {
  approved: 'partner.approved',
  rejected: 'partner.rejected',
  revoked: 'partner.revoked',
  expired: 'approval.expired',
  suspended: 'partner.suspended',
} as const satisfies Record<string, WebhookEventType>;

/** Parses `--events a,b`: every name must be a known type; none given means all. */
export function parseEventList(text: string | undefined): WebhookEventType[] {
  if (text === undefined) return [...webhookEventTypes];
  const names = text
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  const unknown = names.filter((name) => !(webhookEventTypes as readonly string[]).includes(name));
  if (names.length === 0 || unknown.length > 0)
    throw new UsageError(
      `--events takes a comma-separated list of ${webhookEventTypes.join(', ')}${unknown.length ? `; unknown: ${unknown.map((name) => JSON.stringify(name.slice(0, 40))).join(', ')}` : ''}`,
    );
  return [...new Set(names)] as WebhookEventType[];
}
