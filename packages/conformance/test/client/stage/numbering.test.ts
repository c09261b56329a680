import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryLedger } from '../../../src/client/stage/ledger.js';
import {
  generateStageSigningKey,
  type HostedStage,
  openHostedStage,
  playScenarios,
} from '../../../src/index.js';
import { clientCredentialsRequest } from '../../helpers.js';

/**
 * How long the ledger below takes to hand out a number and to register a token, and the stage's delays
 * of an API call and of a token: both round trips together (400 ms, and the first token's own signing)
 * fit in the token's delay, so that a stage that skipped the delay answers sooner than one that kept it.
 */
const numberingMs = 200;
const issuingMs = 200;
const apiDelayMs = 400;
const tokenDelayMs = 1_000;

/**
 * A stage whose ledger numbers and registers tokens slowly (as a database shared by instances does, a
 * round trip away): each number is taken at once, in the order asked, and handed back `numberingMs`
 * later; a token is registered at once and its reference handed back `issuingMs` later.
 */
describe("a stage waits for its ledger's round trips only where it needs their answers", () => {
  const ledger = memoryLedger({ maxExchanges: 100, scenarios: playScenarios(new Set(), ['read:loans']) });
  const asked: number[] = [];
  let stage: HostedStage;
  let server: Server;
  let origin = '';
  const client = {
    clientId: 'numbering-client',
    clientSecret: 'numbering-secret-0123456789abcdef',
    partnerId: 'numbering-partner',
    authorizedScopes: ['read:loans'],
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      const url = req.url ?? '/';
      const [, prefix] = /^\/(auth|api)/.exec(url) ?? [];
      if (!prefix) {
        res.writeHead(404).end();
        return;
      }
      void stage.handle(prefix as 'auth' | 'api', req, res, url.slice(prefix.length + 1) || '/');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    stage = await openHostedStage({
      ledger: {
        ...ledger,
        async nextSeq() {
          const seq = await ledger.nextSeq();
          asked.push(seq);
          await new Promise((resolve) => setTimeout(resolve, numberingMs));
          return seq;
        },
        async issue(draft) {
          const issued = await ledger.issue(draft);
          await new Promise((resolve) => setTimeout(resolve, issuingMs));
          return issued;
        },
      },
      client,
      authUrl: `${origin}/auth`,
      baseUrl: `${origin}/api`,
      startedAtEpoch: Date.now(),
      ttlSeconds: 60,
      longTtlSeconds: 60,
      signingKey: await generateStageSigningKey(),
      tokenDelayMs,
      apiDelayMs,
    });
  });

  afterAll(async () => {
    await stage?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  it("an API call's numbering runs during its delay and a token's numbering and registering during its own; numbers follow arrival order", async () => {
    const asking = performance.now();
    const token = await clientCredentialsRequest(`${origin}/auth/oauth/token`, client, {
      scope: 'read:loans',
    }).then((response) => response.json() as Promise<{ access_token: string }>);
    const tokenMs = performance.now() - asking;
    expect(token.access_token).toBeTruthy();
    // Its delay is kept (a stage that skipped it would answer after the round trips, about 400 ms) …
    expect(tokenMs).toBeGreaterThanOrEqual(tokenDelayMs - 5);
    // … with the number and the registration during it: its number first, or the registration after
    // the delay, would take at least 1,200 ms (measured: 1,075–1,095 ms, a fresh client's first request).
    expect(tokenMs, 'the token waited for its number or its registration, then for its delay').toBeLessThan(
      tokenDelayMs + Math.min(numberingMs, issuingMs),
    );

    const call = async () => {
      const sent = performance.now();
      const response = await fetch(`${origin}/api/v3/partner/${client.partnerId}/loans?limit=5`, {
        headers: { authorization: `Bearer ${token.access_token}` },
      });
      await response.arrayBuffer();
      return { status: response.status, ms: performance.now() - sent };
    };
    const first = call();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const [one, two] = await Promise.all([first, call()]);
    expect([one.status, two.status]).toEqual([200, 200]);
    // The delay is kept (a stage that skipped it would answer sooner) …
    expect(one.ms).toBeGreaterThanOrEqual(apiDelayMs - 5);
    // … and the number is not waited for first: that would take numberingMs + apiDelayMs (600 ms).
    expect(one.ms, 'the call waited for its number, then for its delay').toBeLessThan(
      apiDelayMs + numberingMs / 2,
    );
    expect(two.ms).toBeLessThan(apiDelayMs + numberingMs / 2);

    // Every request was numbered once, in the order it arrived, and recorded under that number.
    const { exchanges } = ledger.contents();
    expect(asked).toEqual([1, 2, 3]);
    expect(
      exchanges.map((exchange) => [exchange.seq, exchange.server, exchange.status, exchange.issued]),
    ).toEqual([
      [1, 'auth', 200, 'T1'],
      [2, 'api', 200, undefined],
      [3, 'api', 200, undefined],
    ]);
    // The token the stage registered is the one the API calls carried.
    expect(exchanges[1]!.bearer?.token).toBe('T1');
    expect(exchanges[1]!.at).toBeLessThan(exchanges[2]!.at);
  });
});
