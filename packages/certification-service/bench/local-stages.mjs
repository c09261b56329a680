// Local stages of `partner-conformance client` in a process of their own, started fresh by the cold bench
// (bench/cold.bench.mjs) as a partner's laptop starts them: on the default certification plan and the
// stages' default delays (the service's too). Each line on stdin is a count: the stages open are closed
// and that many new ones started; their addresses and clients are written as one JSON line on stdout
// (`exchanges` of the stages just closed with them). stdin's end closes the stages and ends the process.
import { createInterface } from 'node:readline';
import { certificationPlan, startStage } from '@partner-lending/conformance';

let stages = [];
for await (const line of createInterface({ input: process.stdin })) {
  const count = Number(line);
  const exchanges = stages.map((stage) => stage.exchangeCount());
  await Promise.all(stages.map((stage) => stage.close()));
  stages = await Promise.all(Array.from({ length: count }, () => startStage({ plan: certificationPlan })));
  const envs = stages.map((stage) => ({
    tokenUrl: stage.tokenUrl,
    baseUrl: stage.baseUrl,
    clientId: stage.client.clientId,
    clientSecret: stage.client.clientSecret,
  }));
  process.stdout.write(`${JSON.stringify({ envs, exchanges })}\n`);
}
await Promise.all(stages.map((stage) => stage.close()));
