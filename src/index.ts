/** Boot: configuration, database, migrations, then the roles; SIGTERM/SIGINT shut down gracefully. */
import { loadConfig } from './config'
import { createContext } from './context'
import { loadServerKeys } from './crypto'
import { openDatabase } from './db/client'
import { migrate } from './db/migrate'
import { log, setLogFormat, setLogLevel } from './log'
import { startRoles, type RunningRoles } from './roles'
import { serveParent, startSmtpProcesses, type SmtpProcesses } from './smtp-processes'
import { explainStartupFailure, startupExitCode } from './startup-failure'
import { PLUGINS } from './plugins'

export interface Service {
  running: RunningRoles
  /** the extra processes of the smtp role (SMTP_PROCESSES), when this process started them */
  smtpProcesses?: SmtpProcesses
  ctx: ReturnType<typeof createContext>
  shutdown(signal: string): Promise<void>
}

/** Starts the service as configured; `make dev` and the container both come through here. */
export async function startService(env = process.env): Promise<Service> {
  const config = loadConfig(env)
  setLogLevel(config.LOG_LEVEL)
  setLogFormat(config.LOG_FORMAT)
  const db = await openDatabase(config)
  await migrate(db.sql).catch(async error => {
    await db.close()
    throw error
  })
  const ctx = createContext(config, db.sql, loadServerKeys(config), { plugins: PLUGINS, replica: db.replica })
  const running = await startRoles(ctx, config.roles, { embedded: db.embedded })
  const smtpProcesses = running.smtpPort !== undefined && !config.SMTP_CHILD ? await startSmtpProcesses(config, env, running.smtpPort) : undefined
  log.info(config.SMTP_CHILD ? 'smtp process started' : 'service started', {
    roles: config.roles,
    api_port: running.apiPort,
    smtp_port: running.smtpPort,
    smtp_processes: running.smtpPort === undefined ? 0 : config.SMTP_CHILD ? 1 : config.smtpProcesses,
    database: db.embedded ? 'embedded' : 'postgres',
  })
  let stopping: Promise<void> | undefined
  const service: Service = {
    running,
    ctx,
    smtpProcesses,
    shutdown(signal) {
      stopping ??= (async () => {
        log.info('shutting down', { signal })
        await Promise.all([running.stop(), smtpProcesses?.stop()])
        await db.close()
        log.info('stopped')
      })()
      return stopping
    },
  }
  if (config.SMTP_CHILD) serveParent(() => service.shutdown('parent gone'))
  return service
}

export function exitOnSignals(service: Service) {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => void service.shutdown(signal).then(() => process.exit(0)))
  }
}

if (import.meta.main) {
  try {
    exitOnSignals(await startService())
  } catch (error) {
    // the operator's to fix, and the message says how: no stack
    const message = explainStartupFailure(error, process.env, 'bun src/index.ts')
    if (message) {
      console.error(message)
      process.exit(startupExitCode(error))
    }
    log.error('failed to start', { error })
    process.exit(1)
  }
}
