import packageJson from '../package.json' with { type: 'json' };

/** The name and version of this tool, as the reports state them. */
export const tool = { name: packageJson.name, version: packageJson.version } as const;
