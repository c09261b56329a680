import type { ClientConformanceOptions } from '../client/run.js';

/** The client command's flags, read (`parseClientArgs`). */
export interface ClientCliConfig {
  options: ClientConformanceOptions;
  judge?: string;
  json: boolean;
  saveSession?: string;
  reports: { json?: string; junit?: string; html?: string };
  help: boolean;
  /** `--service URL`: the certification service's origin (a hosted run). */
  service?: string;
  serviceKeyFile?: string;
  /** `--attestation FILE` (with --service). */
  attestation?: string;
}
