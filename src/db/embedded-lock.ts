/**
 * The embedded database's data directory lock, apart from PGlite itself: the startup checks and
 * `bin/admin` ask who holds it in every process, while PGlite (a development dependency, not in
 * the production image) is loaded only to open the embedded database (src/db/embedded.ts).
 */
import { linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs'

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
export function lockDataDir(dataDir: string): () => void {
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
