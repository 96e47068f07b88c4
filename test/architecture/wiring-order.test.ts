// Backends: sqlite — reads source files only, no storage.
// Tier: quick
// No late binding in the wiring: src/services.ts builds every service from those built before it. A service's
// initializer (its arguments, callbacks included) never names one declared after it, so the order of construction
// is the order of the file, and nothing calls a service that does not exist yet (ARCHITECTURE.md, "The rules").
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const SERVICES = join(import.meta.dirname, '../../src/services.ts');

/**
 * `name → later name` for each top-level `const` of `createServices` whose initializer mentions a `const` declared
 * after it (callbacks included: that is the late binding the rule forbids).
 */
function lateBindings(source: string): string[] {
  const body = source.slice(source.indexOf('export function createServices('));
  // Declarations of the function's own scope: two spaces in.
  const decls = [...body.matchAll(/^ {2}const (\w+)\b[^=]*=/gm)].map((m) => ({ name: m[1] as string, at: m.index }));
  const found: string[] = [];
  decls.forEach((d, i) => {
    const end = decls[i + 1]?.at ?? body.indexOf('\n  return {', d.at);
    // Comments and string literals say nothing about construction.
    const init = body
      .slice(d.at, end === -1 ? undefined : end)
      .replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, '')
      .replace(/'[^'\n]*'|"[^"\n]*"|`[^`]*`/g, "''");
    for (const later of decls.slice(i + 1)) {
      if (new RegExp(`(?<![\\w.'"])${later.name}\\b`).test(init)) found.push(`${d.name} → ${later.name}`);
    }
  });
  return found;
}

describe('the wiring builds each service from those before it', () => {
  it('no initializer in src/services.ts names a service declared after it', () => {
    expect(lateBindings(readFileSync(SERVICES, 'utf8'))).toEqual([]);
  });

  it('finds a callback that reaches a service built later (the check itself works)', () => {
    const late = `export function createServices(deps) {
  const users = createUsersService({ notify: (n) => notifications.securityNotice(n) });
  const notifications = createNotificationsService({ users });
  return { users, notifications };
}`;
    expect(lateBindings(late)).toEqual(['users → notifications']);
    expect(lateBindings(late.replace('notifications.securityNotice(n)', 'n'))).toEqual([]);
  });
});
