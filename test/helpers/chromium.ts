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

/** No request leaves the machine: Chromium's own background traffic is turned off too. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];
