/**
 * The dependency rules `npm test` checks (ARCHITECTURE.md, "Dependency direction"). Cycles between
 * module folders are checked by scripts/check-deps.mjs on this same graph.
 */
module.exports = {
  forbidden: [
    {
      name: 'db-imports-no-module',
      severity: 'error',
      comment: 'src/db is the storage layer: it knows no domain module, HTTP, CLI or wiring.',
      from: { path: '^src/db/' },
      to: { path: '^src/(modules|http|cli|services|app|server|worker)' },
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
