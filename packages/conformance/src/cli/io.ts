import { existsSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import type { ClientConformanceOptions } from '../client/run.js';
import { ConformanceError, usageError } from '../errors.js';
import type { ConsoleStream } from '../reporters/console.js';
import type { ConformanceOptions } from '../server/run.js';

export type ParseArgsOptionsConfig = NonNullable<ParseArgsConfig['options']>;

/** What a command reads and writes: the process's streams and environment, or a test's. */
export interface CliIo {
  stdout: ConsoleStream;
  stderr: ConsoleStream;
  env: Record<string, string | undefined>;
  /** Extra library options (tests pass the embedded mock's faults here). */
  overrides?: ConformanceOptions;
  /** Client mode: aborted on Ctrl-C (the CLI wires SIGINT/SIGTERM to it). */
  signal?: AbortSignal;
  /** Client mode: extra library options (tests send the journey's output to a pipe). */
  clientOverrides?: Partial<ClientConformanceOptions>;
}

export const defaultIo = (): CliIo => ({ stdout: process.stdout, stderr: process.stderr, env: process.env });

/** Writes each report (its directory created when missing) and says where; ERR_REPORT when one fails. */
export async function writeReports(
  writes: ReadonlyArray<readonly [string, string]>,
  io: Pick<CliIo, 'stdout'>,
): Promise<void> {
  for (const [path, text] of writes) {
    try {
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, text);
    } catch (cause) {
      const reason = cause instanceof Error ? cause.message : String(cause);
      throw new ConformanceError('ERR_REPORT', `could not write the report ${path}: ${reason}`, { cause });
    }
    io.stdout.write(`report written: ${path}\n`);
  }
}

/**
 * Checks a report path: a missing directory is created when the report is written (the reports/ of a
 * first CI run), but a path whose directory is a file, or that is a directory itself, is refused.
 */
export function reportPath(flag: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (value.trim() === '') throw usageError(`--${flag} needs a file path`);
  const path = resolve(value);
  let dir = dirname(path);
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  if (!statSync(dir).isDirectory())
    throw usageError(`--${flag}: ${dir} is a file, so the report cannot go under it; choose another path`);
  if (existsSync(path) && statSync(path).isDirectory())
    throw usageError(`--${flag}: ${path} is a directory, expected a file path`);
  if (existsSync(path) && !statSync(path).isFile())
    throw usageError(
      `--${flag}: ${path} exists and is not a regular file (a FIFO, socket or device); expected a file path to write the report to`,
    );
  return path;
}

/** The argument of `args` that parseArgs stumbled on, found by the same reading it does. */
function offendingArgument(
  args: readonly string[],
  options: ParseArgsOptionsConfig,
  want: 'unknown' | 'missing-value' | 'positional',
): string | undefined {
  const shorts = new Map(
    Object.entries(options).flatMap(([name, option]) => (option.short ? [[option.short, name]] : [])),
  );
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    if (arg === '--') return undefined;
    if (arg.startsWith('--')) {
      const name = arg.slice(2).split('=')[0]!;
      const option = options[name];
      if (!option) {
        if (want === 'unknown') return `--${name}`;
        continue;
      }
      if (option.type === 'string' && !arg.includes('=')) {
        const value = args[index + 1];
        if (value === undefined || value.startsWith('-')) {
          if (want === 'missing-value') return `--${name}`;
          continue;
        }
        index++;
      }
    } else if (arg.startsWith('-') && arg.length > 1) {
      const flag = arg.slice(1, 2);
      if (!shorts.has(flag) && want === 'unknown') return arg;
    } else if (want === 'positional') return arg;
  }
  return undefined;
}

/**
 * node:util parseArgs with our messages: its errors are told apart by their `ERR_PARSE_ARGS_*` code
 * (never by Node's English wording), and the argument at fault is named with the way to go on.
 */
export function parseFlags<T extends ParseArgsOptionsConfig>(
  args: readonly string[],
  options: T,
  command: string,
  allowPositionals: boolean,
): ReturnType<typeof parseArgs<{ args: string[]; options: T; strict: true; allowPositionals: true }>> {
  try {
    return parseArgs({ args: [...args], options, strict: true, allowPositionals });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const help = `run ${command} --help for the flags`;
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      const name = offendingArgument(args, options, 'unknown');
      throw usageError(name ? `unknown option ${name}; ${help}` : `an unknown option was given; ${help}`);
    }
    if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
      const arg = offendingArgument(args, options, 'positional');
      throw usageError(`unexpected argument ${JSON.stringify(arg ?? '')}; ${help}`);
    }
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
      const name = offendingArgument(args, options, 'missing-value');
      if (name)
        throw usageError(`${name} needs a value (for a value starting with "-", write ${name}=VALUE)`);
    }
    const message = error instanceof Error ? error.message : String(error);
    throw usageError(message.split('\n')[0]!.replace(/\.$/, ''));
  }
}
