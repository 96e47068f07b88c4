import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asCli, json, startTestApp, type TestApp } from '../helpers/app.js';

// Backends: both — whether a workspace exists is read from storage
// Tier: quick — one app, two requests
// A fresh install says what to do first: the sign-in page asks GET /console/api/first-run, without a
// session, and names `npx wsvc workspaces create` while it answers has_workspace: false
// (console/src/features/auth/sign-in.tsx; the server's first log line says the same).
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t.close();
});

describe('the first run', () => {
  it('answers has_workspace false on a fresh database, true once a workspace exists', async () => {
    const fresh = await t.request({ method: 'GET', url: '/console/api/first-run' });
    expect(fresh.statusCode, fresh.body).toBe(200);
    expect(json(fresh).data).toEqual({ has_workspace: false });

    await t.services.workspaces.create(asCli(t.services), { name: 'Acme', adminEmail: 'a@acme.test' });
    const after = await t.request({ method: 'GET', url: '/console/api/first-run' });
    expect(json(after).data).toEqual({ has_workspace: true });
  });
});
