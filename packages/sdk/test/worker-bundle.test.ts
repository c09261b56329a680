// The SDK in a server-side edge or worker runtime: bundled by esbuild for a worker target (browser
// platform, "worker" export condition, no Node built-in allowed), then run in a fresh V8 context that
// has nothing but web-standard globals — no process, no Buffer, no require — against the real mock.
import { fileURLToPath } from 'node:url';
import { createContext, runInContext } from 'node:vm';
import { type RunningMock, startMock } from '@partner-lending/mock';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const entry = `
import { createPartnerClient, PartnerApiError } from '@partner-lending/sdk';
export async function listLoans(config) {
  const client = createPartnerClient(config);
  const page = await client.loans.list({ limit: 3 });
  const denied = await client.repayments.create({ amount: 1 }).catch((error) => (error instanceof PartnerApiError ? error.code : String(error)));
  return { count: page.items.length, total: page.total, denied };
}
`;

let mock: RunningMock;
let bundle: string;
beforeAll(async () => {
  mock = await startMock();
  const result = await build({
    // Resolved from the package itself: @partner-lending/sdk is its own exports map, as installed.
    stdin: {
      contents: entry,
      resolveDir: fileURLToPath(new URL('..', import.meta.url)),
      sourcefile: 'worker.mjs',
    },
    bundle: true,
    platform: 'browser',
    conditions: ['worker'],
    format: 'iife',
    globalName: 'partnerWorker',
    write: false,
    logLevel: 'silent',
  });
  bundle = result.outputFiles[0]!.text;
}, 60_000);
afterAll(() => mock?.close());

describe('the SDK bundled for a worker', () => {
  it('imports no Node built-in', () => {
    expect(bundle.length).toBeGreaterThan(10_000);
    expect(bundle).not.toMatch(/\brequire\(["'](node:)?(crypto|buffer|http|https|stream|util|fs|os)["']\)/);
    expect(bundle).not.toMatch(/from ["']node:/);
  });

  it('lists loans from the mock with nothing but web globals', async () => {
    const web = {
      fetch,
      URL,
      URLSearchParams,
      Headers,
      Request,
      Response,
      AbortController,
      AbortSignal,
      TextEncoder,
      FormData,
      Blob,
      ReadableStream,
      TextDecoder,
      crypto: globalThis.crypto,
      setTimeout,
      clearTimeout,
      queueMicrotask,
      structuredClone,
      Event,
      EventTarget,
      DOMException,
      atob,
      btoa,
      performance,
      console,
    };
    const context = createContext({ ...web });
    expect(runInContext('typeof process + typeof Buffer + typeof require', context)).toBe(
      'undefinedundefinedundefined',
    );
    runInContext(bundle, context);
    const client = mock.clients[2]!; // read:loans only
    const result = await runInContext(
      'partnerWorker.listLoans',
      context,
    )({
      authUrl: mock.authUrl,
      baseUrl: mock.baseUrl,
      clientId: client.clientId,
      clientSecret: client.clientSecret,
    });
    // The result is an object of the other realm: compare its JSON.
    expect(JSON.parse(JSON.stringify(result))).toEqual({
      count: 3,
      total: 25,
      denied: 'ERR_SCOPE_NOT_GRANTED',
    });
  });
});
