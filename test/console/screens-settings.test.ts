// Backends: sqlite — the settings, billing and audit log pages of the console bundle at two sizes and in two schemes
// Tier: full — drives Chromium
import { describeScreens } from './screens-fixture.js';

// The workspace's settings: keys, members, the profile, billing with a finalized invoice, sign-in
// security and the audit log (test/console/screens-fixture.ts).
describeScreens('settings', { billing: true }, [
  {
    name: 'keys',
    url: (s) => s.at('/settings/keys'),
    heading: 'API Keys',
    doc: 'console-keys',
    ready: (p) => p.getByText('Analytics export').first().waitFor(),
  },
  {
    name: 'members',
    url: (s) => s.at('/settings/members'),
    heading: 'Members',
    ready: (p) => p.getByText('linus@acme.test').first().waitFor(),
  },
  { name: 'profile', url: (s) => s.at('/settings/profile'), heading: 'Profile' },
  {
    name: 'billing',
    url: (s) => s.at('/settings/billing'),
    heading: 'Billing',
    doc: 'console-billing',
    ready: (p) => p.getByRole('heading', { name: /^Plan: Pro/ }).waitFor(),
  },
  { name: 'invoice', url: (s) => s.at(`/settings/billing/invoices/${s.invoiceId}`), heading: 'Invoice INV-1' },
  {
    name: 'security',
    url: (s) => s.at('/settings/security'),
    heading: 'Sign-in security',
    ready: (p) => p.getByRole('button', { name: 'Save single sign-on' }).waitFor(),
  },
  {
    name: 'audit-log',
    url: (s) => s.at('/settings/audit-log'),
    heading: 'Audit log',
    ready: (p) => p.getByRole('table', { name: 'Audit log' }).waitFor(),
  },
]);
