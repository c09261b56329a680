import { redactSecrets, redactTokens } from './redact.js';
import type { TokenEvent } from './token-event.js';

/** The levels of `PARTNER_LOG`: `debug` every step, `info` token events and warnings, `warn` warnings. */
export const logLevels = ['debug', 'info', 'warn'] as const;
export type LogLevel = (typeof logLevels)[number];

/** The logger the toolkit writes to stderr when `PARTNER_LOG` is set; the SDK's `logger` shape. */
export interface StderrLogger {
  debug?(message: string, details?: Record<string, unknown>): void;
  info?(message: string, details?: Record<string, unknown>): void;
  warn(message: string, details?: Record<string, unknown>): void;
}

let warnedValue: string | undefined;

/**
 * The level `PARTNER_LOG` asks for, or undefined when it is unset. An unknown value leaves logging off
 * and says so once on stderr: a diagnostics switch must not stop a program.
 */
export function logLevelFromEnv(value: string | undefined): LogLevel | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const level = value.trim().toLowerCase();
  if ((logLevels as readonly string[]).includes(level)) return level as LogLevel;
  if (warnedValue !== value) {
    warnedValue = value;
    console.error(
      `[partner-lending] PARTNER_LOG=${JSON.stringify(value)} is not one of ${logLevels.join(', ')}: logging stays off.`,
    );
  }
  return undefined;
}

/**
 * A logger writing one line per entry to stderr (`console.error`, which every runtime has), the client
 * secret and id replaced and every token shortened to its last 6 characters.
 */
export function createStderrLogger(level: LogLevel, secrets: readonly string[] = []): StderrLogger {
  const write = (kind: string, message: string, details?: Record<string, unknown>) => {
    const text = `[partner-lending] ${kind} ${message}${details === undefined ? '' : ` ${JSON.stringify(details)}`}`;
    console.error(redactTokens(redactSecrets(text, secrets)));
  };
  return {
    ...(level === 'debug' && { debug: (message, details) => write('debug', message, details) }),
    ...(level !== 'warn' && { info: (message, details) => write('info', message, details) }),
    warn: (message, details) => write('warn', message, details),
  };
}

/** Token events as log lines: failures as warnings, cache hits at debug (one per call), the rest at info. */
export function logTokenEvent(logger: StderrLogger, event: TokenEvent): void {
  const { type, ...details } = event as TokenEvent & Record<string, unknown>;
  if (/fail|throttl/.test(type)) logger.warn(`token: ${type}`, details);
  else if (type === 'cache-hit') logger.debug?.(`token: ${type}`, details);
  else logger.info?.(`token: ${type}`, details);
}
