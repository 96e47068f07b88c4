// Backends: sqlite — the signed-out pages of the console bundle at two sizes and in two schemes
// Tier: full — drives Chromium
import { expect, it } from 'vitest';
import { expectAccessible } from '../helpers/browser.js';
import { openPage } from '../helpers/console-server.js';
import { BACKGROUND, describeScreens, STEP, VIEWPORTS } from './screens-fixture.js';

// The sign-in pages, the single sign-on callback's refusal and the not-found page (test/console/screens-fixture.ts),
// and the in-app Theme choice.
const { seeded } = describeScreens('sign-in', {}, [
  { name: 'sign-in', url: (s) => `${s.cs.base}/console/sign-in`, heading: 'Sign in', signedOut: true },
  {
    name: 'forgot-password',
    url: (s) => `${s.cs.base}/console/forgot-password`,
    heading: 'Forgot your password',
    signedOut: true,
  },
  {
    name: 'set-password',
    url: (s) => s.inviteLink,
    heading: 'Set your password',
    signedOut: true,
    ready: (p) => p.getByText('grace@acme.test').first().waitFor(),
  },
  {
    // The provider's answer with a state this server never made: the refusal and the way back.
    name: 'sso-callback',
    url: (s) => `${s.cs.base}/console/sso/callback?state=unknown&code=unknown`,
    heading: 'Single sign-on',
    signedOut: true,
    ready: (p) => p.getByRole('alert').waitFor(),
  },
  // The enrolment page (/two-factor-setup) needs a session held by the second-factor policy:
  // test/console/team-sign-in.test.ts checks it at 390 px in dark.
  { name: 'not-found', url: (s) => s.at('/no-such-page'), heading: 'Page not found' },
]);

it(
  "the in-app Theme choice flips a light system's page to dark and back",
  async () => {
    const s = seeded();
    const p = await s.cs.page({ viewport: VIEWPORTS[1280], colorScheme: 'light', signedIn: s.acme.signedIn });
    const bg = () => p.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
    await openPage(p, s.at('/overview'), 'Overview', 'theme-light');
    expect(await bg()).toBe(BACKGROUND.light);
    await p.getByLabel('Theme').selectOption('dark');
    expect(await bg()).toBe(BACKGROUND.dark);
    await expectAccessible(p, 'theme-dark-chosen');
    await p.getByLabel('Theme').selectOption('system');
    expect(await bg()).toBe(BACKGROUND.light);
  },
  STEP,
);
