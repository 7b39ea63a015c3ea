/**
 * `make dev`: the service on its embedded default, plus a development organization (created
 * once, on the developer plan) whose API key, and its owner's sign-in (for `agent-mail login`
 * and the OAuth pages), are printed at every start. Both are kept in DATA_DIR/dev-org.json
 * because the database only stores their hashes. While it runs, `bin/admin` works through its
 * admin socket (src/admin/socket.ts). Logs are short lines for a person unless LOG_FORMAT=json.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { isAbsolute, relative } from 'node:path'
import { planOf } from './account/org-queries'
import { createOrgCommand, createUserCommand } from './admin/commands'
import { serveAdminSocket } from './admin/socket'
import { loadConfig, type Config } from './config'
import { startService, type Service } from './index'
import { log } from './log'
import { explainStartupFailure, preflight, startupExitCode } from './startup-failure'

/**
 * Development defaults, each overridable from the environment: webhooks to a receiver on this
 * machine are allowed, logs read as lines for a person, and the links the service hands out
 * (download URLs, discovery) name the port it was given.
 */
const port = process.env.PORT && /^[1-9]\d*$/.test(process.env.PORT) ? process.env.PORT : undefined
const env = { WEBHOOK_ALLOW_LOOPBACK: 'true', LOG_FORMAT: 'text', ...(port && { PUBLIC_URL: `http://localhost:${port}` }), ...process.env }
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
function stop(signal: string) {
  admin?.stop()
  void service.shutdown(signal).then(() => process.exit(0))
}
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => stop(signal))
followMakeSignals()

/**
 * make forwards SIGTERM to this process but not SIGINT: on a SIGINT of its own it waits for its
 * children, since a terminal's Ctrl-C reaches the whole process group. A SIGINT sent to make's
 * pid alone would leave both running. While make is in its handler for a signal, Linux shows
 * the signal blocked in make's /proc status: stop then, as if we had been sent it.
 */
function followMakeSignals() {
  const parent = `/proc/${process.ppid}`
  try {
    if (!['make', 'gmake'].includes(readFileSync(`${parent}/comm`, 'utf8').trim())) return
  } catch {
    return // not Linux, or no parent to watch
  }
  const watched = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 }
  const timer = setInterval(() => {
    let blocked = 0n
    try {
      blocked = BigInt(`0x${/^SigBlk:\s*([0-9a-f]+)$/m.exec(readFileSync(`${parent}/status`, 'utf8'))?.[1] ?? '0'}`)
    } catch {
      return stop('parent gone')
    }
    const signal = Object.entries(watched).find(([, n]) => blocked & (1n << BigInt(n - 1)))?.[0]
    if (signal) {
      clearInterval(timer)
      stop(`${signal} to make`)
    }
  }, 250)
  timer.unref()
}

const file = `${config.DATA_DIR}/dev-org.json`
const OWNER = 'dev@localhost'
type DevOrg = Awaited<ReturnType<typeof createOrgCommand>> & { email?: string; password?: string }
let org: DevOrg | undefined = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : undefined
let plan = org ? await planOf(sql, org.org_id) : null
if (!org || !plan) {
  org = await createOrgCommand(sql, { plan: 'developer', email: OWNER, name: 'Development' })
  plan = org.plan
}
// the owner signs in with a password of its own (data directories from before it get one now)
if (!org.password) {
  org.email = OWNER
  org.password = randomBytes(12).toString('base64url')
  await createUserCommand(sql, { email: OWNER, password: org.password, org: org.org_id, role: 'owner' })
  writeFileSync(file, JSON.stringify(org, null, 2), { mode: 0o600 })
}

/** Where the database is, without a password that DATABASE_URL may carry. */
function databaseLine(config: Config): string {
  if (!config.DATABASE_URL) return `embedded (PGlite) under ${config.DATA_DIR}/pglite`
  const url = new URL(config.DATABASE_URL)
  return `PostgreSQL at ${url.host}${url.pathname} (DATABASE_URL)`
}

/** A path as typed from here when it is below the current directory, else as it is. */
function here(path: string): string {
  const rel = relative(process.cwd(), path)
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path
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
  Console      ${api}/console
  SMTP         ${host}:${service.running.smtpPort ?? config.SMTP_PORT} (managed domain ${config.MANAGED_DOMAIN})

  Development organization ${org.org_id} (${plan} plan)
  API key      ${org.api_key}
  Sign in      ${org.email} with password ${org.password} (the console, agent-mail login, the OAuth pages)

  Try it:      curl -H "Authorization: Bearer ${org.api_key}" ${api}/v1/whoami
  More keys:   bin/admin key create ${org.org_id}
  Kept in      ${here(file)}

  Stop:        Ctrl-C (the data stays for the next start)
  Reset:       stop, then make reset (deletes ${here(config.DATA_DIR)}/ and nothing else)
`)
