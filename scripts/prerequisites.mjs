#!/usr/bin/env node
// The system prerequisites of the tests: the one list that `pnpm test` checks before it runs anything,
// that `pnpm prerequisites --install` (the README's second line, and `.ci/run`) installs, and that
// CONTRIBUTING and the README point to instead of copying it.
//
//   pnpm prerequisites                        # lists every prerequisite and whether this machine has it
//   pnpm prerequisites --install              # installs what is missing (apt-get as root or with sudo;
//                                             #   Authlib with pip into a venv in the user's cache)
//   pnpm prerequisites --project sdk …        # only what those vitest projects need
//
// Checking is local and fast (a file, a command on PATH, a one-line probe): it never calls apt-get or
// the network. Only `--install` does, and only for what is missing.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Every vitest project of the workspace (the `name` in each vitest.config.ts). */
export const projects = [
  'spec',
  'auth',
  'sdk',
  'mock',
  'conformance',
  'token-store-redis',
  'certification-service',
  'docs',
  'scripts',
];

const cacheRoot = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'partner-lending');
/** The venv that holds Authlib for the client-mode interop bed (kept between runs). */
export const authlibVenv = join(cacheRoot, 'python-authlib');

/** A command found on PATH (an absolute path also works), or undefined. */
export function onPath(command, path = process.env.PATH ?? '') {
  if (command.includes('/')) return isExecutable(command) ? command : undefined;
  for (const dir of path.split(delimiter).filter(Boolean)) {
    const candidate = join(dir, command);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

function isExecutable(file) {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Runs a short probe; true when it exits 0 within 20 s. */
function probe(command, args, env = process.env) {
  const result = spawnSync(command, args, { stdio: 'ignore', timeout: 20_000, env });
  return result.status === 0;
}

function postgresBin() {
  const root = '/usr/lib/postgresql';
  if (existsSync(root))
    for (const version of readdirSync(root).sort().reverse())
      if (isExecutable(join(root, version, 'bin', 'initdb'))) return join(root, version, 'bin');
  const initdb = onPath('initdb');
  return initdb ? initdb.slice(0, -'/initdb'.length) : undefined;
}

/** The Python that has Authlib: PARTNER_TEST_PYTHON, else the venv in the cache, else undefined. */
export function authlibPython(env = process.env) {
  const candidates = [env.PARTNER_TEST_PYTHON, join(authlibVenv, 'bin', 'python3')].filter(Boolean);
  return candidates.find((python) => probe(python, ['-c', 'import authlib, requests'], env));
}

/**
 * Each prerequisite: what it is for, how the tests find it, the Debian package(s) that bring it (or the
 * pip packages and where they go), and the vitest projects that need it.
 */
export const prerequisites = [
  {
    id: 'chromium',
    why: 'browser tests: the docs site, the HTML report, the reviewer UI (driven headless by playwright-core)',
    foundBy: '$CHROMIUM_PATH, else /usr/bin/chromium',
    apt: ['chromium'],
    projects: ['docs', 'conformance', 'certification-service'],
    present: (env) => isExecutable(env.CHROMIUM_PATH || '/usr/bin/chromium'),
  },
  {
    id: 'redis-server',
    why: 'the shared token store against a real Redis: standalone, Cluster (joined with redis-cli) and Sentinel',
    foundBy: '$REDIS_SERVER, else redis-server on PATH; redis-cli on PATH',
    apt: ['redis-server'],
    projects: ['token-store-redis'],
    present: (env) =>
      Boolean(onPath(env.REDIS_SERVER || 'redis-server', env.PATH)) && Boolean(onPath('redis-cli', env.PATH)),
  },
  {
    id: 'postgresql',
    why: 'the certification service on PostgreSQL (each test file starts a throwaway cluster with initdb)',
    foundBy: '/usr/lib/postgresql/<version>/bin/initdb, else initdb on PATH',
    apt: ['postgresql'],
    projects: ['certification-service', 'docs'],
    present: () => Boolean(postgresBin()),
  },
  {
    id: 'nginx',
    why: 'the certification service behind nginx terminating TLS, as the operator guide deploys it',
    foundBy: '/usr/sbin/nginx',
    apt: ['nginx-light'],
    projects: ['certification-service'],
    present: () => isExecutable('/usr/sbin/nginx'),
  },
  {
    id: 'openssl',
    why: 'a self-signed certificate for the TLS test',
    foundBy: 'openssl on PATH',
    apt: ['openssl'],
    projects: ['certification-service'],
    present: (env) => Boolean(onPath('openssl', env.PATH)),
  },
  {
    id: 'curl',
    why: "the curl-only partner journey (examples/curl-journey.sh), the production guide's commands",
    foundBy: 'curl on PATH',
    apt: ['curl'],
    projects: ['certification-service', 'docs'],
    present: (env) => Boolean(onPath('curl', env.PATH)),
  },
  {
    id: 'jq',
    why: "the guides' shell blocks that read JSON answers (certify from any CI, from staging to production)",
    foundBy: 'jq on PATH',
    apt: ['jq'],
    projects: ['docs'],
    present: (env) => Boolean(onPath('jq', env.PATH)),
  },
  {
    id: 'python3',
    why: 'programs in another language than ours: webhook receivers and partner journeys',
    foundBy: 'python3 on PATH',
    apt: ['python3'],
    projects: ['conformance', 'certification-service'],
    present: (env) => Boolean(onPath('python3', env.PATH)),
  },
  {
    id: 'go',
    why: "the client-mode interop bed: a partner program on Go's golang.org/x/oauth2 (GOPATH mode, nothing downloaded)",
    foundBy: 'go on PATH; /usr/share/gocode/src/golang.org/x/oauth2',
    apt: ['golang-go', 'golang-golang-x-oauth2-dev'],
    projects: ['conformance'],
    present: (env) =>
      Boolean(onPath('go', env.PATH)) &&
      existsSync('/usr/share/gocode/src/golang.org/x/oauth2/clientcredentials'),
  },
  {
    id: 'ruby-oauth2',
    why: "the client-mode interop bed: a partner program on Ruby's oauth2 gem",
    foundBy: 'ruby on PATH that can require "oauth2"',
    apt: ['ruby', 'ruby-oauth2'],
    projects: ['conformance'],
    present: (env) => Boolean(onPath('ruby', env.PATH)) && probe('ruby', ['-e', 'require "oauth2"'], env),
  },
  {
    id: 'java',
    why: "the client-mode interop bed: a partner program on Java 17's java.net.http",
    foundBy: 'java and javac on PATH (a JDK: the test compiles the journey with javac, then runs it)',
    apt: ['openjdk-17-jdk-headless'],
    projects: ['conformance'],
    present: (env) => Boolean(onPath('java', env.PATH)) && Boolean(onPath('javac', env.PATH)),
  },
  {
    id: 'authlib',
    why: "the client-mode interop bed: partner programs on Python's Authlib (and requests), on the local stage and through the hosted service",
    foundBy: `$PARTNER_TEST_PYTHON, else ${authlibVenv.replace(homedir(), '~')}/bin/python3, able to import authlib and requests`,
    pip: ['authlib', 'requests'],
    // python3 -m venv needs ensurepip, which Debian ships apart.
    apt: ['python3-venv'],
    projects: ['conformance', 'certification-service'],
    present: (env) => Boolean(authlibPython(env)),
  },
  {
    id: 'util-linux',
    why: 'setsid and mkfifo: runaway process groups and never-ending inputs in the CLI tests',
    foundBy: 'setsid and mkfifo on PATH',
    apt: ['util-linux', 'coreutils'],
    projects: ['conformance', 'mock'],
    present: (env) => Boolean(onPath('setsid', env.PATH)) && Boolean(onPath('mkfifo', env.PATH)),
  },
];

/** The projects named by `--project X` / `--project=X` in vitest's arguments; every project when none. */
export function selectedProjects(args) {
  const named = [];
  args.forEach((arg, index) => {
    if (arg === '--project' && index + 1 < args.length) named.push(args[index + 1]);
    else if (arg.startsWith('--project=')) named.push(arg.slice('--project='.length));
  });
  return named.length === 0 ? projects : named;
}

/** The prerequisites of `wanted` projects this machine lacks. */
export function missingFor(wanted, env = process.env) {
  return prerequisites.filter(
    (item) => item.projects.some((project) => wanted.includes(project)) && !item.present(env),
  );
}

/** The exact commands that install `missing`, for a person to copy. */
export function installCommands(missing) {
  const apt = [...new Set(missing.filter((item) => !item.pip).flatMap((item) => item.apt))];
  const pip = missing.filter((item) => item.pip);
  const commands = [];
  const sudo = process.getuid?.() === 0 ? '' : 'sudo ';
  const venvApt =
    pip.length > 0 && !probe('python3', ['-c', 'import ensurepip']) ? pip.flatMap((item) => item.apt) : [];
  const packages = [...apt, ...venvApt];
  if (packages.length > 0)
    commands.push(`${sudo}apt-get update && ${sudo}apt-get install -y ${packages.join(' ')}`);
  for (const item of pip)
    commands.push(
      `python3 -m venv ${authlibVenv} && ${join(authlibVenv, 'bin', 'pip')} install ${item.pip.join(' ')}`,
    );
  return commands;
}

/** The message that stops a test run: every missing prerequisite, why, and how to install it. */
export function missingMessage(missing, wanted) {
  const scope = wanted.length === projects.length ? 'the tests' : `the ${wanted.join(', ')} tests`;
  const lines = [
    `✖ ${scope} need ${missing.length} thing${missing.length === 1 ? '' : 's'} this machine does not have; no test was run:`,
    ...missing.map(
      (item) =>
        `  - ${item.id}: ${item.why} (looked for ${item.foundBy}; ${item.pip ? `pip: ${item.pip.join(' ')}` : `Debian: ${item.apt.join(' ')}`}; needed by ${item.projects.filter((project) => wanted.includes(project)).join(', ')})`,
    ),
    '',
    'Install them with `pnpm prerequisites --install` (as root or with passwordless sudo), or by hand:',
    ...installCommands(missing).map((command) => `  ${command}`),
    '',
    'Or run only the projects this machine can: pnpm test --project <name> (projects and what each needs: pnpm prerequisites).',
  ];
  return lines.join('\n');
}

/** Root, or sudo that asks no password; and apt-get. */
function canUseApt() {
  if (!onPath('apt-get')) return { ok: false, why: 'this machine has no apt-get' };
  if (process.getuid?.() === 0) return { ok: true, sudo: [] };
  if (onPath('sudo') && probe('sudo', ['-n', 'true'])) return { ok: true, sudo: ['sudo', '-n'] };
  return { ok: false, why: 'installing needs root or passwordless sudo, and this user has neither' };
}

function runLoud(argv, env = process.env) {
  console.log(`  $ ${argv.join(' ')}`);
  const result = spawnSync(argv[0], argv.slice(1), { stdio: 'inherit', env });
  if (result.status !== 0)
    throw new Error(`${argv.join(' ')} failed (exit ${result.status ?? result.signal})`);
}

/** Installs `missing`: apt packages in one apt-get call, then the pip venv. Returns what is still missing. */
export function install(missing, wanted) {
  const aptItems = missing.filter((item) => !item.pip || !probe('python3', ['-c', 'import ensurepip']));
  const aptPackages = [...new Set(aptItems.flatMap((item) => item.apt))];
  if (aptPackages.length > 0) {
    const apt = canUseApt();
    if (!apt.ok) {
      console.error(`${missingMessage(missing, wanted)}\n\n(Nothing was installed: ${apt.why}.)`);
      return missing;
    }
    for (const item of aptItems.filter((entry) => !entry.pip))
      console.log(`▶ installing ${item.apt.join(' ')} (Debian) for ${item.id}: ${item.why}`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    runLoud([...apt.sudo, 'apt-get', 'update', '-qq'], env);
    runLoud([...apt.sudo, 'apt-get', 'install', '-y', '-qq', '--no-install-recommends', ...aptPackages], env);
  }
  for (const item of missing.filter((entry) => entry.pip)) {
    console.log(`▶ installing ${item.pip.join(' ')} (pip) into ${authlibVenv} for ${item.id}: ${item.why}`);
    runLoud(['python3', '-m', 'venv', authlibVenv]);
    // The machine's configured index serves them; no retries against an index it cannot reach.
    runLoud([
      join(authlibVenv, 'bin', 'pip'),
      'install',
      '--quiet',
      '--disable-pip-version-check',
      '--retries',
      '0',
      '--timeout',
      '15',
      ...item.pip,
    ]);
  }
  return missingFor(wanted);
}

function list(wanted) {
  for (const item of prerequisites.filter((entry) =>
    entry.projects.some((project) => wanted.includes(project)),
  )) {
    const mark = item.present(process.env) ? '✓' : '✖';
    console.log(`${mark} ${item.id} — ${item.why}`);
    console.log(`    found by: ${item.foundBy}`);
    console.log(
      `    from: ${item.pip ? `pip ${item.pip.join(' ')} (venv; Debian ${item.apt.join(' ')})` : `Debian ${item.apt.join(' ')}`}`,
    );
    console.log(`    needed by: ${item.projects.join(', ')}`);
  }
  const none = projects.filter((project) => !prerequisites.some((item) => item.projects.includes(project)));
  console.log(`\nNode and npm alone run: ${none.join(', ')}.`);
}

function main(args) {
  const unknown = args.filter(
    (arg, index) =>
      !['--install', '--project'].includes(arg) &&
      !arg.startsWith('--project=') &&
      args[index - 1] !== '--project',
  );
  if (unknown.length > 0) {
    console.error(
      `✖ unknown argument ${unknown[0]}: expected --install and --project NAME (one of ${projects.join(', ')}).`,
    );
    return 2;
  }
  const wanted = selectedProjects(args);
  const strangers = wanted.filter((project) => !projects.includes(project));
  if (strangers.length > 0) {
    console.error(`✖ no project named ${strangers.join(', ')}: the projects are ${projects.join(', ')}.`);
    return 2;
  }
  if (!args.includes('--install')) {
    list(wanted);
    return missingFor(wanted).length === 0 ? 0 : 1;
  }
  const missing = missingFor(wanted);
  if (missing.length === 0) {
    console.log(`✓ every test prerequisite is here (${prerequisites.length} checked; nothing installed).`);
    return 0;
  }
  const left = install(missing, wanted);
  if (left.length > 0) {
    if (left !== missing) console.error(missingMessage(left, wanted));
    return 1;
  }
  console.log(`✓ installed ${missing.map((item) => item.id).join(', ')}; every test prerequisite is here.`);
  return 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = main(process.argv.slice(2));
