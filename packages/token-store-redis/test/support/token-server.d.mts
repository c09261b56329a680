import type { StoredToken } from '@partner-lending/auth';

export const CLIENT_ID: string;
export const CLIENT_SECRET: string;
export const PARTNER_ID: string;
export interface TokenServer {
  origin: string;
  tokenUrl: string;
  issuer: string;
  audience: string;
  issued: string[];
  tokenRequests(): number;
  requestsSince(since: number): number;
  setTtlSeconds(seconds: number): void;
  setDelayMs(ms: number): void;
  setFailing(failing: boolean): void;
  setRetryAfter(seconds: number | undefined): void;
  foreignToken(who?: { clientId?: string; partnerId?: string; audience?: string }): StoredToken;
  close(): Promise<void>;
}
export function startTokenServer(options?: { ttlSeconds?: number; delayMs?: number }): Promise<TokenServer>;
