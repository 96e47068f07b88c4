// Backends: sqlite — the overview, resources, events and usage pages of the console bundle at two sizes and in two schemes
// Tier: full — drives Chromium
import { expect } from 'vitest';
import { describeScreens } from './screens-fixture.js';

// The pages of what happens in a workspace, with realistic data (test/console/screens-fixture.ts).
describeScreens('activity', { resources: true, webhooks: true }, [
  {
    name: 'overview',
    url: (s) => s.at('/overview'),
    heading: 'Overview',
    doc: 'console-overview',
    ready: (p) => p.getByRole('heading', { name: 'Recent events' }).waitFor(),
  },
  {
    name: 'resources',
    url: (s) => s.at('/resources'),
    heading: 'Resources',
    ready: (p) => p.getByText('Robot arm R2').waitFor(),
  },
  { name: 'resource-detail', url: (s) => s.at(`/resources/${s.resourceId}`), heading: 'Invoice 2026-0042 (paid)' },
  { name: 'events', url: (s) => s.at('/events'), heading: 'Events', ready: (p, s) => p.getByText(s.eventId).waitFor() },
  {
    name: 'event-detail',
    url: (s) => s.at('/events'),
    heading: 'Events',
    ready: async (p) => {
      await p.getByRole('button', { name: 'Show payload' }).first().click();
      await p.locator('pre.code').first().waitFor();
      // The payload opens across the table's whole width, under its row (not in the Payload column).
      const [pre, table] = await Promise.all([
        p.locator('pre.code').first().boundingBox(),
        p.getByRole('table', { name: 'Events' }).boundingBox(),
      ]);
      expect(pre?.width ?? 0).toBeGreaterThan((table?.width ?? 0) * 0.8);
    },
  },
  { name: 'usage', url: (s) => s.at('/usage'), heading: 'Usage' },
  { name: 'usage-requests', url: (s) => s.at('/usage/requests'), heading: 'Failed requests' },
]);
