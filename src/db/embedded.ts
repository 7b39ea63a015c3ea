/** The embedded default database: PGlite (PostgreSQL in WebAssembly) served over a loopback socket. */
import { mkdirSync } from 'node:fs'
import { PGlite } from '@electric-sql/pglite'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'

export async function startEmbeddedPostgres(dataDir: string, port: number) {
  mkdirSync(dataDir, { recursive: true })
  const db = await PGlite.create(dataDir)
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: port || (await freePort()) })
  await server.start()
  return {
    url: `postgres://postgres@${server.getServerConn()}/postgres`,
    async stop() {
      await server.stop()
      await db.close()
    },
  }
}

async function freePort(): Promise<number> {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  return port
}
