import { type ApiOperationId, apiOperationIds, scopeFor } from '@partner-lending/spec';
import type { CheckContext } from '../../context.js';
import type { Exchange } from '../../http-probe.js';

export interface InsufficientScopeCall {
  readonly id: ApiOperationId;
  readonly scope: string;
  /** The answer, or why no call was made (no token lacking only that scope could be had). */
  readonly exchange: Exchange | undefined;
  readonly reason?: string;
}

/**
 * For each API operation, one call with a valid token that lacks the operation's scope (shared by the
 * must and should checks). Create calls carry `{}` and are refused by a correct server: nothing is written.
 */
export function insufficientScopeCalls(context: CheckContext): Promise<InsufficientScopeCall[]> {
  return context.memo('insufficient-scope-calls', () =>
    Promise.all(
      apiOperationIds.map(async (id): Promise<InsufficientScopeCall> => {
        const scope = scopeFor(id);
        const token = await context.tokenWithout(scope);
        if (!token?.accessToken)
          return {
            id,
            scope,
            exchange: undefined,
            reason: `no token without ${scope} could be had (A is only ${scope})`,
          };
        return { id, scope, exchange: await context.callApi(id, { token: token.accessToken }) };
      }),
    ),
  );
}
