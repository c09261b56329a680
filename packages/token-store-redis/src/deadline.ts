import { RedisTokenStoreError } from './errors.js';

/**
 * No answer within the store's own deadline: Redis cannot be reached now (`ERR_REDIS_UNAVAILABLE`). A
 * subclass so that the connection can tell a timeout from another failure; not exported.
 */
export class CommandTimeout extends RedisTokenStoreError {
  constructor(message: string) {
    super('ERR_REDIS_UNAVAILABLE', message);
  }
}

/** Settles like `promise`, or rejects with a CommandTimeout after `ms` (a timer of our own). */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new CommandTimeout(`no answer to ${what} within ${ms} ms`)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
