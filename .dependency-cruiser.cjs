/**
 * The dependency rules `npm test` checks over src/ (ARCHITECTURE.md, "Dependency rules"). Cycles
 * between folders, and the console's rules, are checked by scripts/check-deps.mjs.
 */
/** The closed sets: defined once, imported by the database types, the services and (types only) the console. */
const CLOSED_SETS =
  '^src/kernel/(environments|roles|delivery-statuses|event-types|scopes)\\.ts$';

module.exports = {
  forbidden: [
    {
      name: 'db-imports-no-module',
      severity: 'error',
      comment:
        'src/db is the storage layer: it knows no domain module, HTTP, CLI or wiring; only the closed sets its column types use.',
      from: { path: '^src/db/' },
      to: { path: '^src/(modules|http|cli|services|app|server|worker)', pathNot: CLOSED_SETS },
    },
    {
      name: 'closed-sets-are-leaves',
      severity: 'error',
      comment: 'A closed set (roles, environments, …) is a list and its type: it imports nothing, so anyone may import it.',
      from: { path: CLOSED_SETS },
      to: { path: '^src/', pathNot: CLOSED_SETS },
    },
    {
      name: 'repository-only-from-its-module',
      severity: 'error',
      comment:
        "A table has one owner: a *.repository.ts is imported from its own module folder only; other modules call that module's service (injected in src/services.ts).",
      from: { path: '^src/modules/([^/]+)/' },
      to: { path: '\\.repository\\.ts$', pathNot: '^src/modules/$1/' },
    },
    {
      name: 'repository-only-from-its-module',
      severity: 'error',
      comment: 'Routes, the CLI, the wiring and src/http reach data through services, never a repository.',
      from: { path: '^src/', pathNot: '^src/modules/' },
      to: { path: '\\.repository\\.ts$' },
    },
    {
      name: 'lib-imports-no-module',
      severity: 'error',
      comment: 'src/lib holds small pure helpers used everywhere; it depends on nothing above it.',
      from: { path: '^src/lib/' },
      to: { path: '^src/(modules|http|cli|services|app|server|worker)' },
    },
    {
      name: 'modules-import-no-transport',
      severity: 'error',
      comment: 'Services and repositories never see Fastify plugins, the CLI or the wiring.',
      from: { path: '^src/modules/', pathNot: '\\.(routes|schemas)\\.ts$' },
      to: { path: '^src/(http|cli|services|app|server|worker)' },
    },
    {
      name: 'no-circular-files',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.test\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
