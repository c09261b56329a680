/** Debian's Chromium, or the one `CHROMIUM_PATH` names (an empty value counts as unset, as in `pnpm prerequisites`). */
export const chromiumPath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/** What the browser tests need of playwright-core's `chromium`: each package passes its own. */
export interface ChromiumLauncher<Browser> {
  launch(options: { executablePath: string; headless: boolean; args: string[] }): Promise<Browser>;
}

/**
 * Launches Chromium headless for a browser test, with nothing of its own reaching beyond the machine
 * (no background networking, no component updates). `chromium` is the caller's playwright-core (every
 * package pins the same version), so that this folder, which is no package, depends on nothing;
 * `args` are added (a host resolver rule, for one).
 */
export function launchChromium<Browser>(
  chromium: ChromiumLauncher<Browser>,
  args: readonly string[] = [],
): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      ...args,
    ],
  });
}
