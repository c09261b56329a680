import type { StoredEntryProblem } from './stored-entry.js';

/**
 * What the provider tells an `onEvent` hook. Tokens appear as their last 6 characters (`…abc123`);
 * neither the client id nor the secret ever appears.
 */
export type TokenEvent =
  | {
      type: 'token-requested';
      tokenUrl: string;
      scopes: readonly string[];
      /** 1 for the first attempt. */
      attempt: number;
      /** True when a background refresh (callers are being served the current token meanwhile). */
      background: boolean;
    }
  | {
      type: 'token-received';
      scopes: readonly string[];
      grantedScopes: readonly string[];
      token: string;
      expiresAt: number;
      background: boolean;
    }
  | {
      type: 'token-request-failed';
      scopes: readonly string[];
      code: string;
      message: string;
      background: boolean;
    }
  | { type: 'cache-hit'; scopes: readonly string[]; token: string; expiresAt: number }
  | { type: 'background-refresh'; scopes: readonly string[]; token: string; expiresAt: number }
  | {
      type: 'retry-scheduled';
      scopes: readonly string[];
      /** The attempt that failed. */
      attempt: number;
      delayMs: number;
      reason: 'network' | 'status';
      status?: number;
    }
  | { type: 'throttled'; scopes: readonly string[]; retryAfterMs: number; status?: number }
  | { type: 'invalidated'; scopes: readonly string[]; token?: string }
  | {
      /**
       * A token the shared store returned was not served (a miss): expired, for another audience,
       * client, partner or issuer, inconsistent with its JWT, or (with `verify`) not verifying. An entry
       * that can never be right under its key (anything but `expired`) is deleted from the store.
       */
      type: 'store-entry-rejected';
      scopes: readonly string[];
      reason: StoredEntryProblem;
      /** The rejected token, shortened, when it was a string. */
      token?: string;
    }
  | {
      /**
       * The shared token store failed (down, timed out, answered nonsense). Best-effort: the call goes
       * on with the provider's own memory and, when needed, its own token request.
       */
      type: 'store-failed';
      operation: 'get' | 'set' | 'delete' | 'singleFlight';
      /** The store's error message, tokens shortened. */
      message: string;
    };

export type TokenEventListener = (event: TokenEvent) => void;
