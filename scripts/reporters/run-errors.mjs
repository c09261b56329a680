// A vitest reporter for `pnpm test`: what fails a run without failing a test — errors thrown outside
// any test (an unhandled rejection, an error in a worker) and hooks that failed (an afterAll that
// timed out) — written to the file PARTNER_RUN_ERRORS names, so that the closing summary can name
// them. Vitest's JSON report has no place for the first kind; without this, a run that exits 1 with
// every test passed ends with a count and nothing to look for.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, relative } from 'node:path';

const firstLine = (text) =>
  String(text ?? '')
    .split('\n')
    .find((line) => line.trim() !== '')
    ?.trim()
    .slice(0, 300) ?? '';

export default class RunErrorsReporter {
  onTestRunEnd(testModules, unhandledErrors, reason) {
    const file = process.env.PARTNER_RUN_ERRORS;
    if (!file) return;
    const errors = [];
    for (const error of unhandledErrors ?? []) {
      const where = error?.VITEST_TEST_PATH ? `${relative(process.cwd(), error.VITEST_TEST_PATH)}: ` : '';
      errors.push(`unhandled error: ${where}${error?.name ?? 'Error'}: ${firstLine(error?.message)}`);
    }
    for (const module of testModules ?? []) {
      const where = relative(process.cwd(), module.moduleId);
      for (const error of module.errors?.() ?? []) errors.push(`${where}: ${firstLine(error?.message)}`);
      for (const suite of module.children?.allSuites?.() ?? [])
        for (const error of suite.errors?.() ?? [])
          errors.push(`${where} > ${suite.fullName}: ${firstLine(error?.message)}`);
    }
    if (reason && reason !== 'passed' && reason !== 'failed') errors.push(`the run ended: ${reason}`);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `${JSON.stringify(errors, null, 2)}\n`);
  }
}
