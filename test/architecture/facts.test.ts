// Backends: sqlite — reads source files and builds the app once on an in-memory SQLite database that is never queried.
// Tier: quick — a few seconds; a fact in ARCHITECTURE.md that drifts from the code fails `npm test`.
// The generated sections of ARCHITECTURE.md (the layers and module floors, the table owners, the principals) and
// of docs/code-facts.md (the room graph, the migrations, the routes) are what scripts/architecture-facts.ts writes
// from the code today.
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { applyFacts, FACT_FILES, factFile, generateFacts } from '../../scripts/architecture-facts.js';

describe('the generated facts of ARCHITECTURE.md, docs/code-facts.md and the event reference of docs/api.md', () => {
  let facts: Record<string, string>;
  beforeAll(async () => {
    facts = await generateFacts();
  });

  it('match the code (regenerate with `npm run docs:facts`)', () => {
    const stale: string[] = [];
    for (const [file, names] of Object.entries(FACT_FILES)) {
      const committed = readFileSync(factFile(file), 'utf8');
      const expected = applyFacts(file, committed, facts);
      for (const name of names) {
        const section = new RegExp(`<!-- generated:${name} -->[\\s\\S]*?<!-- /generated:${name} -->`);
        if (committed.match(section)?.[0] !== expected.match(section)?.[0]) stale.push(`${file} ${name}`);
      }
    }
    expect(stale, `differs from the code: ${stale.join(', ')}; run \`npm run docs:facts\``).toEqual([]);
  });

  it('name every migration of src/db/migrate.ts, the tables and the routes', () => {
    const migrations = readFileSync(new URL('../../src/db/migrate.ts', import.meta.url), 'utf8').match(
      /^ {2}'\d{3}-[a-z-]+': \w+,$/gm,
    );
    expect(facts.migrations).toContain(`applies ${migrations?.length} migrations`);
    expect(facts.tables).toContain('| `deliveries` |');
    expect(facts.routes).toContain('| POST | `/v1/resources` | API key, scope `resources:write` |');
  });
});
