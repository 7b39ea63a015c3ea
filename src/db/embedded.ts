/** The embedded default database: PGlite (PostgreSQL in WebAssembly) served over a loopback socket. */
import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { PGlite } from '@electric-sql/pglite'
import { btree_gin } from '@electric-sql/pglite/contrib/btree_gin'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'

/**
 * Another live process has the data directory open. PGlite does not notice a second process on
 * the same files: both would run, and the writes of one would be lost when the other writes
 * its pages back. So the directory is locked, and a second opener gets this error instead.
 */
export class EmbeddedDatabaseInUse extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(`the embedded database under ${dataDir} is in use by process ${pid}`)
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * The live process (another than this one) holding the data directory's lock, if any. A lock
 * naming this process is stale too: a restarted container's service often has the same pid.
 */
export function embeddedDatabaseHolder(dataDir: string): number | undefined {
  let pid: number
  try {
    pid = Number(readFileSync(`${dataDir}.lock`, 'utf8'))
  } catch {
    return undefined
  }
  return Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid) ? pid : undefined
}

/** Takes `<dataDir>.lock` (this process's pid), replacing a lock left by a process that died; returns its release. */
function lockDataDir(dataDir: string): () => void {
  const file = `${dataDir}.lock`
  for (let attempt = 0; ; attempt++) {
    // written whole under a name of its own, then linked into place: a reader never sees a half-written lock
    const mine = `${file}.${process.pid}`
    writeFileSync(mine, String(process.pid), { mode: 0o600 })
    try {
      linkSync(mine, file)
      return () => rmSync(file, { force: true })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw error
      const holder = embeddedDatabaseHolder(dataDir)
      if (holder) throw new EmbeddedDatabaseInUse(dataDir, holder)
      rmSync(file, { force: true })
    } finally {
      rmSync(mine, { force: true })
    }
  }
}

export async function startEmbeddedPostgres(dataDir: string, port: number) {
  mkdirSync(dataDir, { recursive: true })
  const unlock = lockDataDir(dataDir)
  try {
    // btree_gin: the search index holds the organization with the words (sql/0027)
    const db = await PGlite.create(dataDir, { extensions: { btree_gin } })
    const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: port || (await freePort()) })
    await server.start()
    return {
      url: `postgres://postgres@${server.getServerConn()}/postgres`,
      async stop() {
        await server.stop()
        await db.close()
        unlock()
      },
    }
  } catch (error) {
    unlock()
    throw error
  }
}

async function freePort(): Promise<number> {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  return port
}
