/**
 * The embedded default database: PGlite (PostgreSQL in WebAssembly) served over a loopback socket.
 * Development only: PGlite is a development dependency, so this module is loaded lazily
 * (src/db/client.ts) and the production image, installed without it, never reaches it.
 */
import { mkdirSync } from 'node:fs'
import { PGlite } from '@electric-sql/pglite'
import { btree_gin } from '@electric-sql/pglite/contrib/btree_gin'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'
import { lockDataDir } from './embedded-lock'

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
