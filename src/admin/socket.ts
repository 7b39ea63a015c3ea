/**
 * Operator commands while `make dev` runs. The dev process owns the embedded database (one
 * process at a time may open its files), so it listens on a Unix socket in DATA_DIR, readable
 * by its user only, and runs the commands `bin/admin` hands it there, on its own database.
 * One request per connection: a JSON line `{"argv": [...]}` in, one JSON `AdminOutcome` out.
 */
import { chmodSync, existsSync, rmSync } from 'node:fs'
import type { Config } from '../config'
import type { ServerKeys } from '../crypto'
import type { Sql } from '../db/client'
import { runAdmin, type AdminOutcome } from './run'

export const adminSocketPath = (config: Pick<Config, 'DATA_DIR'>) => `${config.DATA_DIR}/admin.sock`

/** Arguments of one command are small; a peer sending more is not bin/admin. */
const MAX_REQUEST_BYTES = 64 * 1024

export function serveAdminSocket(sql: Sql, keys: ServerKeys, config: Config) {
  const path = adminSocketPath(config)
  // Left by a process that died: the caller holds the database lock, so no live process serves it.
  rmSync(path, { force: true })
  const server = Bun.listen<{ request: string; started: boolean }>({
    unix: path,
    socket: {
      open(socket) {
        socket.data = { request: '', started: false }
      },
      async data(socket, chunk) {
        if (socket.data.started) return
        socket.data.request += chunk.toString()
        if (socket.data.request.length > MAX_REQUEST_BYTES) return void socket.end()
        const newline = socket.data.request.indexOf('\n')
        if (newline < 0) return
        socket.data.started = true
        let argv: unknown
        try {
          argv = (JSON.parse(socket.data.request.slice(0, newline)) as { argv?: unknown }).argv
        } catch {}
        const outcome: AdminOutcome =
          Array.isArray(argv) && argv.every(a => typeof a === 'string')
            ? await runAdmin(sql, keys, config, argv)
            : { code: 2, stdout: '', stderr: 'admin socket: expected one JSON line {"argv": [...]}\n' }
        socket.end(JSON.stringify(outcome))
      },
    },
  })
  chmodSync(path, 0o600)
  return {
    path,
    stop() {
      server.stop(true)
      if (existsSync(path)) rmSync(path, { force: true })
    },
  }
}

/** Hands a command to the process serving `path`; undefined when nobody answers there. */
export async function askAdminSocket(path: string, argv: string[]): Promise<AdminOutcome | undefined> {
  if (!existsSync(path)) return undefined
  const { promise, resolve, reject } = Promise.withResolvers<AdminOutcome | undefined>()
  let answer = ''
  try {
    await Bun.connect({
      unix: path,
      socket: {
        open(socket) {
          socket.write(`${JSON.stringify({ argv })}\n`)
        },
        data(_socket, chunk) {
          answer += chunk.toString()
        },
        close() {
          try {
            resolve(JSON.parse(answer) as AdminOutcome)
          } catch {
            reject(new Error(`admin socket ${path}: the running service closed the connection without an answer`))
          }
        },
        error(_socket, error) {
          reject(error)
        },
      },
    })
  } catch (error) {
    // a socket file without a listener: the process that made it is gone
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ECONNREFUSED' || code === 'ENOENT') return undefined
    throw error
  }
  return promise
}
