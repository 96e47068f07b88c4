// Backends: sqlite — the team sign-in pages in Chromium (focus, redirects, the virtual authenticator); the rules they write run on both backends over HTTP in test/console-api/ (two-factor, passkeys, sso, second-factor-policy)
// Tier: full — Chromium with the DevTools virtual authenticator, a real OpenID provider and `wsvc serve`.
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { totpCode } from '../../src/modules/mfa/totp.js';
import { asCli, keyPrincipal } from '../helpers/app.js';
import { expectAccessible, screenshot } from '../helpers/browser.js';
import { PASSWORD } from '../helpers/console.js';
import {
  type ConsoleServer,
  expectNoHorizontalOverflow,
  openPage,
  signInContext,
  startConsoleServer,
} from '../helpers/console-server.js';
import { type OidcProvider, startOidcProvider } from '../helpers/oidc-provider.js';

// The team sign-in in Chromium (docs/sign-in.md): two-factor codes set up on the Profile page and used
// at sign-in, a recovery code, a passkey (the DevTools virtual authenticator: user verification, a
// resident key) to sign in without an email and as the second factor, refused once removed; single
// sign-on against a real OpenID provider (first arrival, "SSO required", the provider down); the
// enrolment page a required second factor leads to; axe on each, and 390 px and dark.
const STEP = 240_000;
const SECRET = 'journey-client-secret-0123456789';
let cs: ConsoleServer;
let idp: OidcProvider;
let ws: string;
let adminCtx: BrowserContext;
let page: Page;
let totpSecret = '';
let recoveryCodes: string[] = [];

beforeAll(async () => {
  // Passkeys need a domain name: the relying party id is PUBLIC_URL's host name, and an IP address is not one.
  cs = await startConsoleServer({ host: 'localhost', env: { SSO_ALLOW_HTTP_ISSUER: 'true' } });
  idp = await startOidcProvider({
    clients: [{ client_id: 'wsvc', client_secret: SECRET, redirect_uris: [`${cs.base}/console/sso/callback`] }],
  });
  const out = await cs.services.workspaces.create(asCli(cs.services), {
    name: 'Corp',
    adminEmail: 'ada@corp.test',
    adminName: 'Ada',
  });
  ws = out.workspace.id;
  adminCtx = await cs.browser.newContext({ viewport: { width: 1280, height: 800 }, timezoneId: 'UTC' });
  await signInContext(adminCtx, cs.base, out.set_password_url);
  page = await adminCtx.newPage();
}, STEP);

afterAll(async () => {
  await adminCtx?.close();
  await cs?.close();
  await idp?.close();
});

/** A fresh browser (no cookie) on the sign-in page, with email and password typed and sent. */
async function passwordStep(email: string, opts: { width?: number; scheme?: 'light' | 'dark' } = {}) {
  const ctx = await cs.browser.newContext({
    viewport: { width: opts.width ?? 1280, height: 844 },
    colorScheme: opts.scheme ?? 'light',
    timezoneId: 'UTC',
  });
  const p = await ctx.newPage();
  await p.goto(`${cs.base}/console/sign-in`);
  await p.getByLabel('Email').fill(email);
  await p.getByLabel('Password').fill(PASSWORD);
  await p.getByRole('button', { name: 'Sign in', exact: true }).click();
  return { ctx, p };
}

async function signOut(p: Page) {
  await p.getByRole('button', { name: 'Sign out' }).click();
  await p.getByRole('heading', { name: 'Sign in' }).waitFor();
}

describe('team sign-in in Chromium', () => {
  it(
    'two-factor codes: set up on the Profile page, asked for after the password; a recovery code signs in once',
    async () => {
      await openPage(page, `${cs.base}/console/w/${ws}/live/settings/profile`, 'Profile', 'profile-two-factor-off');
      await page.getByRole('button', { name: 'Set up two-factor codes' }).click();
      await page.getByRole('img', { name: 'QR code of your two-factor key' }).waitFor();
      totpSecret = (await page.locator('.totp-secret').textContent()) ?? '';
      expect(totpSecret).toMatch(/^[A-Z2-7]{32}$/);
      await expectAccessible(page, 'profile-two-factor-qr');
      await screenshot(page, 'team-sign-in-qr');
      await page.getByLabel('Code from the app').fill(totpCode(totpSecret, Date.now()));
      await page.getByRole('button', { name: 'Turn on two-factor codes' }).click();
      const region = page.getByRole('region', { name: /Your recovery codes/ });
      await region.waitFor();
      recoveryCodes = (await region.locator('code').allTextContents()).map((c) => c.trim());
      expect(recoveryCodes).toHaveLength(10);
      await expectAccessible(page, 'profile-recovery-codes');
      await page.getByRole('button', { name: 'I have saved them' }).click();
      await page.getByText('10 of 10 recovery codes left.').waitFor();

      // Sign-in asks for the code after the password. The enrolment used this step's code: the next
      // step's (one step of drift is accepted) signs in.
      const a = await passwordStep('ada@corp.test');
      await a.p.getByRole('heading', { name: 'Two-factor check' }).waitFor();
      await expectAccessible(a.p, 'sign-in-second-factor');
      await a.p.getByLabel('Code from your authenticator app').fill('000000');
      await a.p.getByRole('button', { name: 'Verify' }).click();
      await a.p.getByRole('alert').filter({ hasText: 'wrong or was already used' }).waitFor();
      await a.p.getByLabel('Code from your authenticator app').fill(totpCode(totpSecret, Date.now() + 30_000));
      await a.p.getByRole('button', { name: 'Verify' }).click();
      await a.p.getByRole('heading', { name: 'Overview' }).waitFor();
      await a.ctx.close();

      const b = await passwordStep('ada@corp.test');
      await b.p.getByRole('button', { name: 'Use a recovery code' }).click();
      await b.p.getByLabel('Recovery code').fill(recoveryCodes[0] as string);
      await b.p.getByRole('button', { name: 'Verify' }).click();
      await b.p.getByRole('heading', { name: 'Overview' }).waitFor();
      await b.ctx.close();
      const c = await passwordStep('ada@corp.test');
      await c.p.getByRole('button', { name: 'Use a recovery code' }).click();
      await c.p.getByLabel('Recovery code').fill(recoveryCodes[0] as string);
      await c.p.getByRole('button', { name: 'Verify' }).click();
      await c.p.getByRole('alert').filter({ hasText: 'wrong or was already used' }).waitFor();
      await c.ctx.close();
    },
    STEP,
  );

  it(
    'a passkey: added on the Profile page, signs in without an email and as the second factor; removed, it signs in no more',
    async () => {
      const cdp = await adminCtx.newCDPSession(page);
      await cdp.send('WebAuthn.enable');
      await cdp.send('WebAuthn.addVirtualAuthenticator', {
        options: {
          protocol: 'ctap2',
          transport: 'internal',
          hasResidentKey: true,
          hasUserVerification: true,
          isUserVerified: true,
          automaticPresenceSimulation: true,
        },
      });
      await openPage(page, `${cs.base}/console/w/${ws}/live/settings/profile`, 'Profile', 'profile-passkeys-empty');
      await page.getByLabel('Passkey name').fill('Laptop');
      await page.getByRole('button', { name: 'Add a passkey' }).click();
      await page.getByText('Passkey added.').waitFor();
      await page.getByRole('button', { name: 'Rename Laptop' }).waitFor();
      await expectAccessible(page, 'profile-passkeys');

      // Without an email: the browser offers the site's passkey (a discoverable credential).
      await signOut(page);
      await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
      await page.getByRole('heading', { name: 'Overview' }).waitFor();

      // As the second factor after the password.
      await signOut(page);
      await page.getByLabel('Email').fill('ada@corp.test');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByRole('button', { name: 'Use a passkey' }).click();
      await page.getByRole('heading', { name: 'Overview' }).waitFor();

      // Removed: the authenticator still holds it, the server no longer accepts it.
      await openPage(page, `${cs.base}/console/w/${ws}/live/settings/profile`, 'Profile', 'profile-passkeys');
      await page.getByRole('button', { name: 'Remove Laptop' }).click();
      await page
        .getByRole('dialog', { name: 'Remove this passkey?' })
        .getByRole('button', { name: 'Remove passkey' })
        .click();
      await page.getByText('No passkeys yet.').waitFor();
      await signOut(page);
      await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
      await page.getByRole('alert').filter({ hasText: 'The passkey was not accepted' }).waitFor();
      // Back in with a recovery code, for the next journeys.
      await page.getByLabel('Email').fill('ada@corp.test');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByRole('button', { name: 'Use a recovery code' }).click();
      await page.getByLabel('Recovery code').fill(recoveryCodes[1] as string);
      await page.getByRole('button', { name: 'Verify' }).click();
      await page.getByRole('heading', { name: 'Overview' }).waitFor();
    },
    STEP,
  );

  it(
    'single sign-on: set up by the admin; a first arrival becomes a member; "SSO required" refuses the password except for the break-glass admin; the provider down',
    async () => {
      // A member with a password, before single sign-on is required.
      const invited = await cs.services.members.invite(asCli(cs.services), ws, {
        email: 'pat@corp.test',
        role: 'member',
      });
      const patCtx = await cs.browser.newContext();
      await signInContext(patCtx, cs.base, invited.invite_url);
      await patCtx.close();

      await openPage(page, `${cs.base}/console/w/${ws}/live/settings/security`, 'Sign-in security', 'security-empty');
      await page.getByLabel('Issuer URL').fill(idp.issuer);
      await page.getByLabel('Client ID').fill('wsvc');
      await page.getByLabel('Client secret').fill(SECRET);
      await page.getByLabel('Allowed email domains').fill('corp.test');
      await page.getByLabel('Role for people who arrive first through SSO').selectOption('member');
      await page.getByRole('button', { name: 'Save single sign-on' }).click();
      await page.getByText('Single sign-on saved.').waitFor();
      expect(await page.content()).not.toContain(SECRET);
      await expectAccessible(page, 'security-sso');

      const n = await passwordStepless('new.person@corp.test');
      await n.p.getByRole('button', { name: 'Continue with SSO' }).click();
      await n.p.getByRole('heading', { name: 'Overview' }).waitFor();
      await n.p.getByText('new.person@corp.test · member').waitFor();
      await n.ctx.close();

      await page.reload();
      await page.getByLabel(/SSO required/).check();
      await page.getByLabel('Break-glass admin (keeps the password)').selectOption({ label: 'ada@corp.test' });
      await page.getByRole('button', { name: 'Save single sign-on' }).click();
      await page.getByText('Single sign-on saved.').waitFor();

      const pat = await passwordStep('pat@corp.test');
      await pat.p.getByRole('alert').filter({ hasText: 'signs in with single sign-on only' }).waitFor();
      await pat.ctx.close();
      // The break-glass admin keeps the password (and the second factor).
      const ada = await passwordStep('ada@corp.test');
      await ada.p.getByRole('button', { name: 'Use a recovery code' }).click();
      await ada.p.getByLabel('Recovery code').fill(recoveryCodes[2] as string);
      await ada.p.getByRole('button', { name: 'Verify' }).click();
      await ada.p.getByRole('heading', { name: 'Overview' }).waitFor();
      await ada.ctx.close();

      // The provider down: a clear message on the sign-in page.
      await idp.close();
      const down = await passwordStepless('pat@corp.test');
      await down.p.getByRole('button', { name: 'Continue with SSO' }).click();
      await down.p.getByRole('alert').filter({ hasText: 'did not answer' }).waitFor();
      await expectAccessible(down.p, 'sign-in-sso-down');
      await down.ctx.close();
    },
    STEP,
  );

  it(
    'a workspace that requires a second factor: the enrolment page before any other',
    async () => {
      const out = await cs.services.workspaces.create(asCli(cs.services), {
        name: 'Strict',
        adminEmail: 'bo@strict.test',
      });
      await cs.services.mfa.setPolicy(cs.services.uow.as(await keyPrincipal(cs.services, out.keys.live.key)), true);
      const ctx = await cs.browser.newContext({ viewport: { width: 390, height: 844 }, colorScheme: 'dark' });
      const token = new URL(out.set_password_url).searchParams.get('token');
      const p = await ctx.newPage();
      await p.goto(`${cs.base}/console/set-password?token=${token}`);
      await p.getByLabel('New password').fill(PASSWORD);
      await p.getByLabel('Repeat the password').fill(PASSWORD);
      await p.getByRole('button', { name: /Set password/ }).click();
      await p.getByRole('heading', { name: 'Set up a second factor' }).waitFor();
      await p.goto(`${cs.base}/console/w/${out.workspace.id}/live/overview`);
      await p.getByRole('heading', { name: 'Set up a second factor' }).waitFor();
      await p.getByText('Loading two-factor settings…').waitFor({ state: 'detached' });
      await expectAccessible(p, 'enrol-390-dark');
      await expectNoHorizontalOverflow(p, 'enrol-390-dark');
      await screenshot(p, 'team-sign-in-enrol-390-dark');
      await ctx.close();
    },
    STEP,
  );

  it(
    'the new pages at 390 px in dark: profile, sign-in security, the second-factor step',
    async () => {
      const state = await adminCtx.storageState();
      const ctx = await cs.browser.newContext({
        viewport: { width: 390, height: 844 },
        colorScheme: 'dark',
        storageState: state,
      });
      const p = await ctx.newPage();
      for (const [path, heading] of [
        ['settings/profile', 'Profile'],
        ['settings/security', 'Sign-in security'],
      ] as const) {
        await openPage(p, `${cs.base}/console/w/${ws}/live/${path}`, heading, `${heading}-390-dark`);
        await expectNoHorizontalOverflow(p, `${heading}-390-dark`);
        const bg = await p.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
        expect(bg).toBe('rgb(13, 17, 23)');
        await screenshot(p, `team-sign-in-${path.replace('/', '-')}-390-dark`);
      }
      await ctx.close();
      const step = await passwordStep('ada@corp.test', { width: 390, scheme: 'dark' });
      await step.p.getByRole('heading', { name: 'Two-factor check' }).waitFor();
      await expectAccessible(step.p, 'second-factor-390-dark');
      await expectNoHorizontalOverflow(step.p, 'second-factor-390-dark');
      await screenshot(step.p, 'team-sign-in-second-factor-390-dark');
      await step.ctx.close();
    },
    STEP,
  );
});

/** A fresh browser on the sign-in page with only the email typed (the SSO offer appears for its domain). */
async function passwordStepless(email: string) {
  const ctx = await cs.browser.newContext({ viewport: { width: 1280, height: 800 }, timezoneId: 'UTC' });
  const p = await ctx.newPage();
  await p.goto(`${cs.base}/console/sign-in`);
  await p.getByLabel('Email').fill(email);
  return { ctx, p };
}
