#!/usr/bin/env node
// `pnpm pack:local [--out DIR] [NAME…]`: the workspace's published packages as npm tarballs, made from
// this clone's build, for a project outside the repository — before the packages are on a registry, or
// on a machine without one. Each package is packed with `pnpm pack`, which rewrites its `workspace:`
// dependencies to the versions of this workspace; installed together, the tarballs satisfy each other,
// so npm asks the registry only for third-party dependencies. The files get short names (sdk.tgz,
// auth.tgz, spec.tgz…), and the last lines print the `npm install` command for each package with the
// tarballs of the workspace packages it needs. Build first (`pnpm pack:local` does, through turbo).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values, positionals } = parseArgs({
  options: { out: { type: 'string', default: 'packed' }, help: { type: 'boolean', short: 'h' } },
  allowPositionals: true,
});
if (values.help) {
  process.stdout.write(
    'usage: pnpm pack:local [--out DIR] [NAME…]\n  writes DIR/NAME.tgz (default DIR: ./packed) for every published workspace package, or the NAMEs given (sdk, auth, spec, mock, conformance, token-store-redis, certification-service)\n',
  );
  process.exit(0);
}

/** The published workspace packages: short name → folder and manifest. */
const packages = new Map();
for (const dir of ['spec', ...readdirSync(join(root, 'packages')).map((name) => join('packages', name))]) {
  const file = join(root, dir, 'package.json');
  if (!existsSync(file)) continue;
  const manifest = JSON.parse(readFileSync(file, 'utf8'));
  if (manifest.private) continue;
  packages.set(manifest.name.replace(/^@partner-lending\//, ''), { dir, manifest });
}

const unknown = positionals.filter((name) => !packages.has(name));
if (unknown.length > 0) {
  process.stderr.write(
    `pack:local: no published workspace package ${unknown.join(', ')} (the packages are ${[...packages.keys()].join(', ')})\n`,
  );
  process.exit(2);
}

/** A package and every workspace package it depends on, itself first. */
function closure(name, seen = new Set()) {
  if (seen.has(name)) return [];
  seen.add(name);
  const { manifest } = packages.get(name);
  const deps = Object.entries({ ...manifest.dependencies, ...manifest.peerDependencies })
    .filter(([, range]) => String(range).startsWith('workspace:'))
    .map(([dep]) => dep.replace(/^@partner-lending\//, ''));
  return [name, ...deps.flatMap((dep) => closure(dep, seen))];
}

/** A path as the user typed it best: relative below the current folder, absolute elsewhere. */
const shown = (path) => (path.startsWith(`${process.cwd()}/`) ? `./${relative(process.cwd(), path)}` : path);

const wanted = positionals.length > 0 ? positionals : [...packages.keys()];
const toPack = [...new Set(wanted.flatMap((name) => closure(name)))];
const out = resolve(values.out);
mkdirSync(out, { recursive: true });
for (const name of toPack) {
  const { dir, manifest } = packages.get(name);
  if (manifest.main && !existsSync(join(root, dir, manifest.main))) {
    process.stderr.write(
      `pack:local: ${dir} is not built (${manifest.main} is missing): run \`pnpm build\` first\n`,
    );
    process.exit(1);
  }
  // pnpm pack's own name: scope and name joined, then the version.
  const packed = join(out, `${manifest.name.replace(/^@/, '').replace('/', '-')}-${manifest.version}.tgz`);
  rmSync(packed, { force: true });
  execFileSync('pnpm', ['pack', '--pack-destination', out], {
    cwd: join(root, dir),
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (!existsSync(packed)) {
    process.stderr.write(`pack:local: pnpm pack wrote no ${packed} for ${manifest.name}\n`);
    process.exit(1);
  }
  const target = join(out, `${name}.tgz`);
  renameSync(packed, target);
  process.stdout.write(`${shown(target)}  ${manifest.name}@${manifest.version}\n`);
}
process.stdout.write(
  '\nInstall in another project (npm asks the registry only for third-party dependencies):\n',
);
for (const name of wanted)
  process.stdout.write(
    `  ${name}: npm install ${closure(name)
      .map((each) => shown(join(out, `${each}.tgz`)))
      .join(' ')}\n`,
  );
