// Backends: sqlite — the webhooks, deliveries, notifications and integrations pages of the console bundle at two sizes and in two schemes
// Tier: full — drives Chromium
import { describeScreens } from './screens-fixture.js';

// The pages of what the workspace sends out, with two endpoints whose deliveries succeeded and
// failed, and a Slack integration (test/console/screens-fixture.ts).
describeScreens('webhooks', { webhooks: true, slack: true }, [
  {
    name: 'webhooks',
    url: (s) => s.at('/webhooks'),
    heading: 'Webhooks',
    ready: (p) => p.getByText('Warehouse').first().waitFor(),
  },
  {
    name: 'webhook-detail',
    url: (s) => s.at(`/webhooks/${s.downHook}`),
    heading: 'Warehouse',
    doc: 'console-delivery-log',
    ready: (p) => p.getByRole('table', { name: 'Deliveries' }).getByText('failed').first().waitFor(),
  },
  {
    name: 'delivery-detail',
    url: (s) => s.at(`/webhooks/${s.downHook}?delivery=${s.failedDelivery}`),
    heading: 'Warehouse',
    ready: (p) => p.getByText('Attempt 1').first().waitFor(),
  },
  {
    name: 'notifications',
    url: (s) => s.at('/notifications'),
    heading: 'Notifications',
    doc: 'console-notifications',
    ready: (p) => p.getByRole('list', { name: 'Notifications' }).waitFor(),
  },
  {
    name: 'integrations',
    url: (s) => s.at('/settings/integrations'),
    heading: 'Integrations',
    doc: 'console-integrations',
    ready: (p) => p.getByRole('table', { name: 'Integrations' }).waitFor(),
  },
]);
