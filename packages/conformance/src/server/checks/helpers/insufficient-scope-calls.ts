import { type ApiOperationId, apiOperationIds, scopeFor } from '@partner-lending/spec';
import type { CheckContext } from '../../context.js';
import type { Exchange } from '../../http/probe.js';

export interface InsufficientScopeCall {
  readonly id: ApiOperationId;
  readonly scope: string;
  /** The answer, or why no call was made (no positive control on the route, no token lacking the scope). */
  readonly exchange: Exchange | undefined;
  readonly reason?: string;
}

/**
 * For each API operation, one call with a valid token that lacks the operation's scope (shared by the
 * must and should checks), made only when the same route answers a valid token (its positive control).
 * Create endpoints are called only with --allow-writes: a server that ignores scopes would write.
 */
export async function insufficientScopeCalls(context: CheckContext): Promise<InsufficientScopeCall[]> {
  const calls = await context.memo('insufficient-scope-calls', () =>
    Promise.all(
      apiOperationIds.map(async (id): Promise<InsufficientScopeCall> => {
        const scope = scopeFor(id);
        const control = await context.routeControl(id);
        if (!control.ok) return { id, scope, exchange: undefined, reason: control.reason };
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
  // Another check may have made the calls: cite them as this check's evidence too.
  for (const call of calls) context.cite(call.exchange);
  for (const call of calls) if (call.exchange) await context.routeControl(call.id);
  return calls;
}
