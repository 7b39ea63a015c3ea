/**
 * The inbound SMTP listener: owns sockets, the connection cap, idle timers, STARTTLS and
 * shutdown. Everything protocol-related happens in SmtpSession.
 */
import type { Socket, TCPSocketListenOptions } from 'bun'
import { connectionBudget, type ConnectionBudget } from '../connection-budget'
import { log } from '../log'
import { formatReply } from './reply'
import { SmtpSession, newSessionId, type SessionIO } from './session'
import type { SmtpHooks, SmtpServer, SmtpServerOptions } from './types'

const encoder = new TextEncoder()

type ConnSocket = Socket<Connection | undefined>

/** One accepted socket (and, after STARTTLS, its TLS twin) plus its session. */
class Connection implements SessionIO {
  readonly session: SmtpSession
  readonly startedAt = Date.now()
  /** After STARTTLS the raw socket's handlers still fire with ciphertext; they must ignore it. */
  upgraded = false
  closed = false
  private socket: ConnSocket
  /** Bun's socket.write is unbuffered: whatever it did not take waits here for `drain`. */
  private pending: Uint8Array[] = []
  private ending = false
  private tlsPending = false
  private readonly idleTimer: Timer

  constructor(
    socket: ConnSocket,
    private readonly server: Server,
  ) {
    this.socket = socket
    this.session = new SmtpSession(
      {
        hostname: server.opts.hostname,
        maxMessageBytes: server.opts.maxMessageBytes,
        maxRecipients: server.opts.maxRecipients,
        maxBadCommands: server.opts.maxBadCommands,
        tlsAvailable: server.opts.tls !== undefined,
      },
      server.hooks,
      this,
      { id: newSessionId(), remoteAddress: normalizeAddress(socket.remoteAddress) },
    )
    this.idleTimer = setTimeout(() => this.onIdle(), server.opts.idleTimeoutMs)
  }

  write(text: string): void {
    if (this.closed || this.ending) return
    this.idleTimer.refresh()
    if (this.pending.length > 0) return void this.pending.push(encoder.encode(text))
    // Bun encodes a string as it writes it; what has to wait (behind pending bytes, or the rest
    // of a partial write) is encoded here.
    const written = Math.max(0, this.socket.write(text))
    if (written < Buffer.byteLength(text, 'utf8')) this.pending.push(encoder.encode(text).subarray(written))
  }

  close(): void {
    if (this.closed || this.ending) return
    this.ending = true
    if (this.pending.length === 0) this.socket.end()
  }

  startTls(): void {
    // The 220 must be on the wire, unencrypted, before the handshake starts.
    if (this.pending.length > 0) this.tlsPending = true
    else this.upgrade()
  }

  pause(): void {
    this.socket.pause()
  }

  resume(): void {
    this.socket.resume()
  }

  receive(data: Uint8Array): void {
    this.idleTimer.refresh()
    void this.session.receive(data)
  }

  drain(): void {
    while (this.pending.length > 0) {
      const head = this.pending[0]!
      const written = Math.max(0, this.socket.write(head))
      if (written < head.length) {
        this.pending[0] = head.subarray(written)
        return
      }
      this.pending.shift()
    }
    if (this.ending) this.socket.end()
    else if (this.tlsPending) {
      this.tlsPending = false
      this.upgrade()
    }
  }

  onClose(): void {
    if (this.closed) return
    this.closed = true
    clearTimeout(this.idleTimer)
    this.session.detach()
    this.server.forget(this)
    log.info('smtp connection closed', {
      session: this.session.id,
      remote: this.session.remoteAddress,
      outcome: this.session.outcome,
      messages: this.session.messages,
      tls: this.session.tls,
      durationMs: Date.now() - this.startedAt,
    })
  }

  /** Used when the shutdown grace period is over. */
  terminate(): void {
    this.session.detach('aborted')
    this.socket.terminate()
    this.onClose()
  }

  private upgrade(): void {
    const tls = this.server.opts.tls
    if (!tls || this.closed) return
    this.upgraded = true
    const [, secure] = this.socket.upgradeTLS<Connection | undefined>({
      data: this,
      tls: { cert: tls.cert, key: tls.key },
      socket: this.server.tlsHandlers,
    })
    this.socket = secure
  }

  private onIdle(): void {
    if (this.closed) return
    // We already said goodbye and the client keeps the socket open: drop it.
    if (this.ending) return this.terminate()
    // The client is waiting for a hook's verdict, not idling.
    if (this.session.waitingOnHook) return void this.idleTimer.refresh()
    this.session.idleTimeout()
    this.idleTimer.refresh()
  }
}

class Server {
  readonly connections = new Set<Connection>()
  stopping = false
  private allClosed: (() => void) | null = null

  /** the sockets this process may hold, HTTP's included (src/connection-budget.ts) */
  readonly budget: ConnectionBudget

  constructor(
    readonly opts: SmtpServerOptions,
    readonly hooks: SmtpHooks,
  ) {
    this.budget = opts.budget ?? connectionBudget
  }

  readonly plainHandlers = {
    open: (socket: ConnSocket) => this.accept(socket),
    data: (socket: ConnSocket, data: Uint8Array) => {
      const conn = socket.data
      if (conn && !conn.upgraded) conn.receive(data)
    },
    drain: (socket: ConnSocket) => {
      const conn = socket.data
      if (conn && !conn.upgraded) conn.drain()
    },
    close: (socket: ConnSocket) => socket.data?.onClose(),
    error: (socket: ConnSocket, error: Error) => {
      log.debug('smtp socket error', { session: socket.data?.session.id, error: error.message })
    },
  }

  readonly tlsHandlers = {
    handshake: (socket: ConnSocket) => socket.data?.session.tlsStarted(),
    data: (socket: ConnSocket, data: Uint8Array) => {
      const conn = socket.data
      if (!conn) return
      // Decrypted bytes only exist after a completed handshake, whatever order callbacks come in.
      conn.session.tlsStarted()
      conn.receive(data)
    },
    drain: (socket: ConnSocket) => socket.data?.drain(),
    close: (socket: ConnSocket) => socket.data?.onClose(),
    error: (socket: ConnSocket, error: Error) => {
      log.debug('smtp tls error', { session: socket.data?.session.id, error: error.message })
    },
  }

  forget(conn: Connection): void {
    if (this.connections.delete(conn)) this.budget.release()
    if (this.connections.size === 0) this.allClosed?.()
  }

  async stop(listener: { stop(closeActive?: boolean): void }, graceMs: number): Promise<void> {
    if (!this.stopping) {
      this.stopping = true
      listener.stop()
    }
    const drained = new Promise<void>(resolve => {
      if (this.connections.size === 0) resolve()
      else this.allClosed = resolve
    })
    for (const conn of this.connections) conn.session.shutdown()
    let timer: Timer | undefined
    const grace = new Promise<void>(resolve => (timer = setTimeout(resolve, graceMs)))
    await Promise.race([drained, grace])
    clearTimeout(timer)
    for (const conn of [...this.connections]) conn.terminate()
  }

  private accept(socket: ConnSocket): void {
    // the process's budget last: it counts the connection in
    if (this.stopping || this.connections.size >= this.opts.maxConnections || !this.budget.take()) {
      const remote = normalizeAddress(socket.remoteAddress)
      socket.data = undefined
      socket.write(formatReply(421, '4.7.0', `${this.opts.hostname} too many connections, try again later`))
      socket.end()
      log.warn('smtp connection refused', { remote, reason: this.stopping ? 'stopping' : 'too many connections' })
      return
    }
    const conn = new Connection(socket, this)
    socket.data = conn
    this.connections.add(conn)
    socket.setNoDelay(true)
    void conn.session.start()
  }
}

/** IPv4 clients on a dual-stack socket show up as ::ffff:a.b.c.d. */
function normalizeAddress(ip: string): string {
  return /^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(ip) ? ip.slice(7) : ip
}

export async function startSmtpServer(opts: SmtpServerOptions, hooks: SmtpHooks): Promise<SmtpServer> {
  const server = new Server(opts, hooks)
  // Bun.listen takes reusePort (SO_REUSEPORT) on 1.4.5, though its types only list it for connect.
  const listenOptions: TCPSocketListenOptions<Connection | undefined> & { reusePort: boolean } = {
    hostname: opts.host ?? '0.0.0.0',
    port: opts.port,
    reusePort: opts.reusePort ?? false,
    socket: server.plainHandlers,
  }
  const listener = Bun.listen<Connection | undefined>(listenOptions)
  log.info('smtp listening', { host: opts.host ?? '0.0.0.0', port: listener.port, tls: opts.tls !== undefined })
  return {
    port: listener.port,
    stop: (graceMs = 10_000) => server.stop(listener, graceMs),
  }
}
