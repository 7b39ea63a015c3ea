/**
 * `make dev`: the service on its embedded default, plus a development organization (created
 * once, on the developer plan) whose API key is printed at every start. The key is kept in
 * DATA_DIR/dev-org.json because the database only stores its hash. While it runs, `bin/admin`
 * works through its admin socket (src/admin/socket.ts).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { planOf } from './account/orgs'
import { createOrgCommand } from './admin/commands'
import { serveAdminSocket } from './admin/socket'
import { loadConfig, type Config } from './config'
import { startService, type Service } from './index'
import { log } from './log'
import { explainStartupFailure, preflight, startupExitCode } from './startup-failure'

/**
 * Development defaults, each overridable from the environment: webhooks to a receiver on this
 * machine are allowed, and the links the service hands out (download URLs, discovery) name the
 * port it was given.
 */
const port = process.env.PORT && /^[1-9]\d*$/.test(process.env.PORT) ? process.env.PORT : undefined
const env = { WEBHOOK_ALLOW_LOOPBACK: 'true', ...(port && { PUBLIC_URL: `http://localhost:${port}` }), ...process.env }
const COMMAND = 'make dev'

function fail(message: string, error?: unknown): never {
  console.error(message)
  process.exit(startupExitCode(error))
}

let service: Service
try {
  const collision = preflight(loadConfig(env), COMMAND)
  if (collision) fail(collision)
  service = await startService(env)
} catch (error) {
  const message = explainStartupFailure(error, env, COMMAND)
  if (message) fail(message, error)
  log.error('failed to start', { error })
  process.exit(1)
}

const { sql, keys, config } = service.ctx
/** Without the socket (a path too long for one, say) bin/admin refuses while this runs, and says so. */
function adminSocket() {
  try {
    return serveAdminSocket(sql, keys, config)
  } catch (error) {
    log.warn('no admin socket: bin/admin will ask to stop this process first', { error: (error as Error).message })
    return undefined
  }
}
const admin = config.DATABASE_URL ? undefined : adminSocket()
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    admin?.stop()
    void service.shutdown(signal).then(() => process.exit(0))
  })
}

const file = `${config.DATA_DIR}/dev-org.json`
type DevOrg = Awaited<ReturnType<typeof createOrgCommand>>
let org: DevOrg | undefined = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : undefined
let plan = org ? await planOf(sql, org.org_id) : null
if (!org || !plan) {
  org = await createOrgCommand(sql, { plan: 'developer', email: 'dev@localhost', name: 'Development' })
  writeFileSync(file, JSON.stringify(org, null, 2), { mode: 0o600 })
  plan = org.plan
}

/** Where the database is, without a password that DATABASE_URL may carry. */
function databaseLine(config: Config): string {
  if (!config.DATABASE_URL) return `embedded (PGlite) under ${config.DATA_DIR}/pglite`
  const url = new URL(config.DATABASE_URL)
  return `PostgreSQL at ${url.host}${url.pathname} (DATABASE_URL)`
}

const loopback = ['127.0.0.1', '::1', 'localhost'].includes(config.HOST)
const everywhere = ['0.0.0.0', '::'].includes(config.HOST)
const host = loopback || everywhere ? 'localhost' : config.HOST
const reach = loopback ? 'this machine only' : everywhere ? 'every network interface' : 'that address only'
const api = `http://${host}:${service.running.apiPort}`
console.log(`
  agent mail service is running

  Database     ${databaseLine(config)}
  Listening    ${config.HOST} (${reach}; HOST changes it)
  API          ${api}/v1
  OpenAPI      ${api}/v1/openapi
  Health       ${api}/v1/health
  SMTP         ${host}:${service.running.smtpPort ?? config.SMTP_PORT} (managed domain ${config.MANAGED_DOMAIN})

  Development organization ${org.org_id} (${plan} plan)
  API key      ${org.api_key}

  Try it:      curl -H "Authorization: Bearer ${org.api_key}" ${api}/v1/whoami
  More keys:   bin/admin key create ${org.org_id}
`)
