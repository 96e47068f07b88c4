import { describe, expect, it } from 'vitest';
import { openTestStorage, testBackend } from '../helpers/storage.js';

// Backends: both — checks that each project really runs on its own backend
// Tier: quick
// docs/operations.md one suite, both backends. The sqlite project must stay on SQLite even when
// TEST_DATABASE_URL is set for the run; the postgres project must really use PostgreSQL.
describe('test backend of this vitest project', () => {
  it('matches the project (sqlite never touches PostgreSQL)', async () => {
    const project = process.env.WSVC_TEST_PROJECT;
    expect(project === 'sqlite' || project === 'postgres').toBe(true);
    expect(testBackend()).toBe(project);
    const storage = await openTestStorage();
    try {
      expect(storage.dialect.name).toBe(project);
      expect(storage.url.startsWith(project === 'sqlite' ? 'sqlite:' : 'postgres')).toBe(true);
    } finally {
      await storage.close();
    }
  });
});
