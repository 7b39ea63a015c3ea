/**
 * The floor plan of src/ (docs/architecture.md), checked by `make lint` with dependency-cruiser.
 *
 * Only imports that run count: type-only imports are compiled away (tsPreCompilationDeps is
 * off), while `import('...')` with a literal path is a dependency like any other.
 *
 * A unit is a top-level folder of src/ or a file directly in it. A unit imports only from its
 * own floor or below, and no folders import each other in a loop, on any floor.
 */
const FLOORS = [
  // resources every module may use, and the SMTP protocol (which knows no feature)
  ['ground', ['config.ts', 'log.ts', 'crypto.ts', 'connection-budget.ts', 'startup-failure.ts', 'db', 'dns', 'context.ts', 'errors.ts', 'request-context.ts', 'events.ts', 'smtp']],
  // the mechanisms: HTTP (envelope, guard, pagination, limits), requests out, the job queue
  ['mechanisms', ['http', 'egress', 'jobs', 'smtp-processes.ts']],
  // the core: who is calling, the changes feed, domains and the mail pipeline, with their seams
  ['core', ['account', 'changes', 'oauth', 'auth', 'domains', 'mail']],
  // one folder per feature, plugged into the core's seams by the composition root
  [
    'features',
    [
      'inboxes', 'emails', 'connections', 'contacts', 'networks', 'webhooks', 'memories', 'functions', 'wake', 'templates', 'sending', 'bounces', 'drafts', 'streams',
      'signups', 'credits', 'notes', 'labels', 'registries', 'x402', 'discovery', 'cli', 'agent', 'maintenance',
    ],
  ],
  // the surfaces made from the features' operations (operations.ts lists them)
  ['surfaces', ['operations.ts', 'graphql', 'mcp', 'admin', 'console']],
  // the composition root and the process roles
  ['composition', ['app.ts', 'plugins.ts', 'job-kinds.ts', 'roles.ts', 'index.ts', 'dev.ts']],
]

const unitPath = unit => (unit.endsWith('.ts') ? `^src/${unit.replace('.', '[.]')}$` : `^src/${unit}/`)
const anyOf = units => units.map(unitPath).join('|')

const layerRules = FLOORS.slice(0, -1).map(([floor, units], i) => ({
  name: `floor-${floor}`,
  comment: `${floor} (${units.join(', ')}) imports only from its own floor or below (docs/architecture.md)`,
  severity: 'error',
  from: { path: anyOf(units) },
  to: { path: anyOf(FLOORS.slice(i + 1).flatMap(([, above]) => above)) },
}))

const known = FLOORS.flatMap(([, units]) => units)

module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'no-folder-cycle',
      comment: 'folders never import each other in a loop, directly or through others',
      severity: 'error',
      scope: 'folder',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'no-file-cycle',
      comment: 'modules never import each other in a loop',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'routes-only-in-app',
      comment: "a feature's routes are composed by app.ts (or its own folder) alone; what another module needs lives in the feature's model or service",
      severity: 'error',
      from: { path: '^src/([^/]+)/' },
      to: { path: 'routes[.]ts$', pathNot: '^src/$1/' },
    },
    {
      name: 'unit-on-a-floor',
      comment: 'every unit of src/ has a floor in .dependency-cruiser.cjs (and docs/architecture.md)',
      severity: 'error',
      from: { path: '^src/', pathNot: `${anyOf(known)}|^src/cli-client/` },
      to: {},
    },
    {
      name: 'no-dev-dependency-at-runtime',
      comment:
        'the production image installs no devDependencies (bun install --production): only development code (dev.ts, the embedded database, loaded lazily by db/client.ts) may import one',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/dev[.]ts$|^src/db/embedded[.]ts$' },
      to: { dependencyTypes: ['npm-dev'] },
    },
    {
      name: 'embedded-database-lazily',
      comment: 'the embedded database (PGlite, a devDependency) is loaded with import() where it is used, never on the way to start the service',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/dev[.]ts$' },
      to: { path: '^src/db/embedded[.]ts$', dynamic: false },
    },
    {
      name: 'cli-client-apart',
      comment: 'the command-line client is a program of its own: it talks to the service over HTTP only',
      severity: 'error',
      from: { path: '^src/cli-client/' },
      to: { path: '^src/', pathNot: '^src/cli-client/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: false,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['bun', 'import', 'require', 'node', 'default', 'types'] },
  },
}
