/**
 * Why the service could not start, said so that the reader knows what to do: a port another
 * program holds, a port below 1024 without the right to bind it, the embedded database held by
 * another process, a bad setting. Anything else
 * is unexpected and is logged with its stack by the caller.
 */
import { ConfigError, loadConfig, type Config } from './config'
import { EmbeddedDatabaseInUse, embeddedDatabaseHolder } from './db/embedded-lock'
import { MigrationError } from './db/migrate'

interface PortSetting {
  key: 'PORT' | 'SMTP_PORT' | 'EMBEDDED_PG_PORT'
  port: number
  host: string
}

/** The fixed ports this configuration listens on (0 = any free port, never taken). */
function portSettings(config: Config): PortSetting[] {
  const ports: PortSetting[] = []
  // PORT: the api role's, or the health listener of a process without it (not the extra smtp processes')
  if (!config.SMTP_CHILD && config.PORT) ports.push({ key: 'PORT', port: config.PORT, host: config.HOST })
  if (config.roles.includes('smtp') && config.SMTP_PORT) ports.push({ key: 'SMTP_PORT', port: config.SMTP_PORT, host: config.HOST })
  if (!config.DATABASE_URL && config.EMBEDDED_PG_PORT) ports.push({ key: 'EMBEDDED_PG_PORT', port: config.EMBEDDED_PG_PORT, host: '127.0.0.1' })
  return ports
}

function free(host: string, port: number): boolean {
  try {
    Bun.listen({ hostname: host, port, socket: { data() {} } }).stop(true)
    return true
  } catch {
    return false
  }
}

/** The next free port above `port` that no other setting uses, for the suggestion. */
function nextFree(host: string, port: number, avoid: Set<number>): number {
  for (let p = port + 1; p < Math.min(port + 100, 65536); p++) if (!avoid.has(p) && free(host, p)) return p
  return 0
}

/** What a process of this configuration would collide with, and the same command that would not. */
function collisions(config: Config, taken: PortSetting[], holder: number | undefined, command: string): string | undefined {
  if (!taken.length && !holder) return undefined
  const lines = taken.map(t => `  ${t.key} ${t.port} is already in use on ${t.host} (another copy of this service, or another program)`)
  const dataDir = `${config.DATA_DIR}/pglite`
  if (holder) lines.push(`  the embedded database under ${dataDir} is in use by process ${holder} (another make dev?)`)
  const avoid = new Set(portSettings(config).map(s => s.port))
  const fixes = taken.map(t => {
    const port = nextFree(t.host, t.port, avoid)
    avoid.add(port)
    return `${t.key}=${port}`
  })
  if (holder) fixes.push(`DATA_DIR=${config.DATA_DIR}-2`)
  return [
    `cannot start:`,
    ...lines,
    ``,
    `Stop the other process${holder ? ` (${holder})` : ''}, or start this one with its own ${holder ? 'ports and data directory' : 'ports'}:`,
    `  ${fixes.join(' ')} ${command}`,
  ].join('\n')
}

/** A port below 1024 that this process may not bind (a non-root user, a container without the capability). */
function privileged(setting: PortSetting): string {
  return [
    `cannot start:`,
    `  ${setting.key} ${setting.port} on ${setting.host}: binding a port below 1024 needs a right this process (uid ${process.getuid?.() ?? '?'}) does not have`,
    ``,
    `Listen on a port of 1024 or above and forward ${setting.port} to it (${setting.key}=${setting.port + 2500} with the port mapping of the container or firewall), or give the process the right:`,
    `the capability CAP_NET_BIND_SERVICE (setcap on the binary, or the container runtime's --cap-add), or sysctl net.ipv4.ip_unprivileged_port_start=${setting.port}.`,
  ].join('\n')
}

/** Checked before starting anything, so that one message names every collision at once. */
export function preflight(config: Config, command: string): string | undefined {
  const taken = portSettings(config).filter(s => !free(s.host, s.port))
  const holder = config.DATABASE_URL ? undefined : embeddedDatabaseHolder(`${config.DATA_DIR}/pglite`)
  return collisions(config, taken, holder, command)
}

/** Exit status 2 for what the operator's settings or files must fix, 1 for anything else. */
export const startupExitCode = (error: unknown) => (error instanceof ConfigError || error instanceof MigrationError ? 2 : 1)

/** The message for a failure to start that has an explanation, or undefined for one to log with its stack. */
export function explainStartupFailure(error: unknown, env: Record<string, string | undefined>, command: string): string | undefined {
  if (error instanceof ConfigError || error instanceof MigrationError) return error.message
  let config: Config
  try {
    config = loadConfig(env)
  } catch {
    return undefined
  }
  if (error instanceof EmbeddedDatabaseInUse) return collisions(config, [], error.pid, command)
  const e = error as { code?: string; port?: number; message?: string }
  if (e?.code === 'EADDRINUSE') {
    // Bun.listen names the port; Bun.serve only says "Is port N in use?"
    const port = e.port ?? Number(/port (\d+)/.exec(e.message ?? '')?.[1])
    const setting = portSettings(config).find(s => s.port === port)
    if (setting) return collisions(config, [setting], undefined, command)
  }
  if (e?.code === 'EACCES') {
    // Bun.listen names the port; Bun.serve says "permission denied host:port"
    const port = e.port ?? Number(/:(\d+)\s*$/.exec(e.message ?? '')?.[1])
    const setting = portSettings(config).find(s => s.port === port)
    if (setting) return privileged(setting)
  }
  return undefined
}
