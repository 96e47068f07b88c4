import { execFileSync } from 'node:child_process';

/** Debian's Chromium (`.ci/run` installs the package when missing); a test tool's own browser download cannot work here. */
export function chromiumPath(): string {
  const fromEnv = process.env.CHROMIUM_PATH;
  if (fromEnv) return fromEnv;
  try {
    return execFileSync('which', ['chromium'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error('chromium is not installed: apt-get install chromium (the browser journeys need it)');
  }
}

/**
 * The features Playwright turns off in every Chromium it launches (playwright-core 1.65's defaults).
 * Chromium reads only the last `--disable-features` of its command line, so the one below, which
 * comes after Playwright's, names them again; test/chromium-broker.ts checks it against the command
 * line Playwright actually ran, and stops the browser files naming what is missing.
 */
export const PLAYWRIGHT_DISABLED_FEATURES = [
  'AvoidUnnecessaryBeforeUnloadCheckSync',
  'DestroyProfileOnBrowserClose',
  'HttpsUpgrades',
  'HttpsFirstBalancedModeAutoEnable',
  'LensOverlay',
  'MediaRouter',
  'PaintHolding',
  'ThirdPartyStoragePartitioning',
  'AvoidCorsURLLoaderRestartOnRedirect',
  'TcpPortRandomizationWin',
  'OptimizationHints',
  'NetworkTimeServiceQuerying',
  'AimEnabled',
  'PreconnectToSearch',
  'msForceBrowserSignIn',
  'msEdgeUpdateLaunchServicesPreferredVersion',
];

/**
 * What Debian's Chromium (the full browser, headless) starts for every window that a page of the
 * tests never uses: the address bar's two drop-down pages (chrome://omnibox-popup.top-chrome, in a
 * renderer of their own) and a spare renderer kept warm for the next site. Playwright opens a window
 * for each page of a new context, so each cost three renderer processes where one is used; without
 * them a browser file spends about half the renderer time (docs/testing.md#where-the-time-goes).
 */
export const UNUSED_WINDOW_FEATURES = ['WebUIOmniboxPopup', 'WebUIOmniboxAimPopup', 'SpareRendererForSitePerProcess'];

/** No request leaves the machine: Chromium's own background traffic is turned off too. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
  `--disable-features=${[...PLAYWRIGHT_DISABLED_FEATURES, ...UNUSED_WINDOW_FEATURES].join(',')}`,
];

/**
 * The features Playwright turned off in a Chromium it launched (read off the command line it ran)
 * that the last `--disable-features` of that command line does not name: they would be on.
 */
export function featuresLeftOn(spawnargs: readonly string[]): string[] {
  const lists = spawnargs
    .filter((a) => a.startsWith('--disable-features='))
    .map((a) => a.slice('--disable-features='.length).split(','));
  const last = new Set(lists.at(-1) ?? []);
  return [...new Set(lists.slice(0, -1).flat())].filter((f) => f && !last.has(f));
}
