import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { validateWorkflow } from '@action-validator/core';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { docsRoot } from './helpers/build-site.js';

// The repository's GitHub workflows, validated offline against the workflow schema (action-validator's
// bundled copy), then read for what each must do.
const dir = join(docsRoot, '..', '..', '.github', 'workflows');
const files = readdirSync(dir).filter((name) => name.endsWith('.yml'));
const text = (name: string) => readFileSync(join(dir, name), 'utf8');
const workflow = (name: string): any => parse(text(name));
const steps = (
  name: string,
  job: string,
): Array<{ uses?: string; run?: string; with?: Record<string, unknown> }> => workflow(name).jobs[job].steps;

describe('GitHub workflows', () => {
  it('are ci.yml, release.yml and docs.yml, each valid against the workflow schema', () => {
    expect(files.sort()).toEqual(['ci.yml', 'docs.yml', 'release.yml']);
    for (const name of files) expect(validateWorkflow(text(name)).errors, name).toEqual([]);
  });

  it('the validator is not vacuous: a misspelt key is an error', () => {
    const broken = text('ci.yml').replace('runs-on:', 'runs-onn:');
    expect(validateWorkflow(broken).errors.length).toBeGreaterThan(0);
  });

  it('CI runs .ci/run on pull requests and main, caching the pnpm store and the Node binaries', () => {
    const ci = workflow('ci.yml');
    expect(Object.keys(ci.on).sort()).toEqual(['pull_request', 'push']);
    expect(ci.on.push.branches).toEqual(['main']);
    const test = steps('ci.yml', 'test');
    expect(test.some((step) => step.run === 'bash .ci/run')).toBe(true);
    const cache = test.find((step) => step.uses?.startsWith('actions/cache@'));
    expect(String(cache?.with?.path)).toContain('.cache/partner-lending-ci');
    expect(String(cache?.with?.path)).toContain('pnpm/store');
    expect(ci.jobs.test['timeout-minutes']).toBeLessThanOrEqual(90);
  });

  it('release versions and publishes with changesets, with provenance', () => {
    const release = workflow('release.yml');
    expect(release.permissions['id-token']).toBe('write');
    const action = steps('release.yml', 'release').find((step) =>
      step.uses?.startsWith('changesets/action@'),
    );
    expect(action?.with).toMatchObject({ version: 'pnpm version-packages', publish: 'pnpm release' });
    expect((action as { env?: Record<string, string> }).env?.NPM_CONFIG_PROVENANCE).toBe('true');
    const root = JSON.parse(readFileSync(join(docsRoot, '..', '..', 'package.json'), 'utf8'));
    expect(root.scripts.release).toBe('changeset publish');
    expect(root.scripts['version-packages']).toBe('changeset version');
  });

  it('docs builds the site under the repository path and deploys it to GitHub Pages', () => {
    const docs = workflow('docs.yml');
    expect(docs.permissions).toMatchObject({ pages: 'write', 'id-token': 'write' });
    const build = steps('docs.yml', 'build');
    const site = build.find((step) => step.run === 'pnpm --filter @partner-lending/docs build') as {
      env?: Record<string, string>;
    };
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a GitHub Actions expression, not a JS template
    expect(site?.env?.DOCS_BASE).toBe('/${{ github.event.repository.name }}/');
    expect(build.find((step) => step.uses?.startsWith('actions/upload-pages-artifact@'))?.with?.path).toBe(
      'apps/docs/dist',
    );
    expect(steps('docs.yml', 'deploy').some((step) => step.uses?.startsWith('actions/deploy-pages@'))).toBe(
      true,
    );
  });
});
