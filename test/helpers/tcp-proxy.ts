/**
 * A byte-for-byte TCP relay on 127.0.0.1 that a test can cut (closing every connection, as a
 * network outage would) and open again on the same port: the outage of a database that itself
 * keeps running.
 */
import type { Socket, TCPSocketListener } from 'bun'
import { connectUrl } from '../../src/db/client'

interface Pipe {
  peer?: Socket<Pipe>
  /** bytes the peer could not take yet */
  pending: Uint8Array[]
}

function send(socket: Socket<Pipe>, bytes: Uint8Array) {
  if (socket.data.pending.length) return void socket.data.pending.push(bytes)
  const written = socket.write(bytes)
  if (written < bytes.byteLength) socket.data.pending.push(bytes.subarray(written))
}

function flush(socket: Socket<Pipe>) {
  while (socket.data.pending.length) {
    const next = socket.data.pending[0]!
    const written = socket.write(next)
    if (written < next.byteLength) {
      socket.data.pending[0] = next.subarray(written)
      return
    }
    socket.data.pending.shift()
  }
}

/** A byte-for-byte TCP relay to `target` that can be cut (closing every connection) and reopened. */
export function tcpProxy(target: { hostname: string; port: number }) {
  let listener: TCPSocketListener<Pipe> | undefined
  const sockets = new Set<Socket<Pipe>>()
  let port = 0
  const handlers = {
    open(s: Socket<Pipe>) {
      sockets.add(s)
    },
    data(s: Socket<Pipe>, bytes: Uint8Array) {
      if (s.data.peer) send(s.data.peer, bytes)
      else s.data.pending.push(new Uint8Array(bytes))
    },
    drain: flush,
    close(s: Socket<Pipe>) {
      sockets.delete(s)
      s.data.peer?.end()
    },
    error(s: Socket<Pipe>) {
      s.data.peer?.end()
    },
  }
  return {
    get port() {
      return port
    },
    open() {
      listener = Bun.listen<Pipe>({
        hostname: '127.0.0.1',
        port,
        data: { pending: [] } as unknown as Pipe,
        socket: {
          ...handlers,
          async open(client) {
            client.data = { pending: [] }
            sockets.add(client)
            const upstream = await Bun.connect<Pipe>({ ...target, data: { pending: [], peer: client }, socket: handlers }).catch(() => undefined)
            if (!upstream) return void client.end()
            sockets.add(upstream)
            // what the client sent while the upstream connection was being made
            const early = client.data.pending
            client.data = { pending: [], peer: upstream }
            for (const b of early) send(upstream, b)
          },
        },
      })
      port = listener.port
    },
    cut() {
      listener?.stop(true)
      listener = undefined
      for (const s of sockets) s.terminate()
      sockets.clear()
    },
  }
}

/**
 * A pool of `max` connections to the database at `url`, through a proxy the test can cut and
 * open again: a database outage while the server keeps running.
 */
export function proxiedDatabase(url: string, max: number) {
  const target = new URL(url)
  const proxy = tcpProxy({ hostname: target.hostname, port: Number(target.port || 5432) })
  proxy.open()
  const through = Object.assign(new URL(url), { hostname: '127.0.0.1', port: String(proxy.port) })
  return { proxy, sql: connectUrl(through.toString(), max) }
}
