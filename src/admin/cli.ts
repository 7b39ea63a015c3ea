/**
 * `bin/admin <command>`: the operator command. Prints one JSON object on success; usage errors
 * go to stderr with exit code 2, failures with 1. With the embedded database and `make dev`
 * running, the command runs inside that process (through its admin socket), since only one
 * process may open the embedded database's files.
 */
import { ConfigError, loadConfig } from '../config'
import { loadServerKeys } from '../crypto'
import { openDatabase } from '../db/client'
import { EmbeddedDatabaseInUse } from '../db/embedded-lock'
import { migrate } from '../db/migrate'
import { setLogLevel } from '../log'
import { runAdmin, USAGE, type AdminOutcome } from './run'
import { adminSocketPath, askAdminSocket } from './socket'

async function main(argv: string[]): Promise<AdminOutcome> {
  const config = loadConfig()
  setLogLevel('warn')
  if (!config.DATABASE_URL) {
    const handed = await askAdminSocket(adminSocketPath(config), argv)
    if (handed) return handed
  }
  const db = await openDatabase(config)
  try {
    await migrate(db.sql)
    return await runAdmin(db.sql, loadServerKeys(config), config, argv)
  } finally {
    await db.close()
  }
}

function failure(error: unknown): AdminOutcome {
  if (error instanceof ConfigError) return { code: 2, stdout: '', stderr: `${error.message}\n\n${USAGE}\n` }
  if (error instanceof EmbeddedDatabaseInUse) {
    return {
      code: 1,
      stdout: '',
      stderr:
        `${error.message}, which does not take operator commands (a service started without make dev?).\n` +
        `Nothing was changed. Stop that process and run this command again (or, if it is make dev starting, wait until it prints its banner),\n` +
        `or point DATABASE_URL at a PostgreSQL server.\n`,
    }
  }
  return { code: 1, stdout: '', stderr: `${error instanceof Error ? error.message : String(error)}\n` }
}

const outcome = await main(process.argv.slice(2)).catch(failure)
process.stdout.write(outcome.stdout)
process.stderr.write(outcome.stderr)
process.exit(outcome.code)
