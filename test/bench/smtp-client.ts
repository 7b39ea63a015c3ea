/**
 * The raw SMTP client connection of the SMTP load generators (smtp-load.ts, smtp-rate.ts):
 * a loopback Bun.connect socket that writes with backpressure and hands out the server's
 * replies (multi-line aware) in order.
 */
import type { Socket } from 'bun'

export interface Reply {
  code: number
  text: string
}

export class ReplyError extends Error {}

/** One client connection: writes with backpressure, and SMTP replies (multi-line aware) in order. */
export class Conn {
  private socket: Socket<Conn> | null = null
  private decoder = new TextDecoder()
  private buffer = ''
  private lines: string[] = []
  private ready: Reply[] = []
  private waiter: { resolve(r: Reply): void; reject(e: Error): void; timer?: ReturnType<typeof setTimeout> } | null = null
  private pending: Uint8Array[] = []
  /** performance.now() when the current wait began; 0 = not waiting (for a caller's own watchdog). */
  waitingSince = 0
  closed = false

  static open(port: number): Promise<Conn> {
    const conn = new Conn()
    return Bun.connect<Conn>({
      hostname: '127.0.0.1',
      port,
      data: conn,
      socket: {
        open: s => void s.setNoDelay(true),
        data: (s, data) => s.data.receive(data),
        drain: s => s.data.flush(),
        close: s => s.data.fail(new ReplyError('connection closed')),
        error: (s, err) => s.data.fail(err),
        connectError: (s, err) => s.data.fail(err),
      },
    }).then(socket => {
      conn.socket = socket
      return conn
    })
  }

  write(bytes: Uint8Array): void {
    if (this.closed || !this.socket) throw new ReplyError('connection closed')
    if (this.pending.length > 0) {
      this.pending.push(bytes)
      return
    }
    const written = Math.max(0, this.socket.write(bytes))
    if (written < bytes.length) this.pending.push(bytes.subarray(written))
  }

  flush(): void {
    while (this.pending.length > 0 && this.socket) {
      const head = this.pending[0]!
      const written = Math.max(0, this.socket.write(head))
      if (written < head.length) {
        this.pending[0] = head.subarray(written)
        return
      }
      this.pending.shift()
    }
  }

  /**
   * The next reply from the server, in order. With `timeoutMs`, the connection is failed with
   * 'reply timeout' when no reply comes within it; without, the wait is bounded only by
   * whoever watches `waitingSince`.
   */
  next(timeoutMs?: number): Promise<Reply> {
    const reply = this.ready.shift()
    if (reply) return Promise.resolve(reply)
    if (this.closed) return Promise.reject(new ReplyError('connection closed'))
    this.waitingSince = performance.now()
    return new Promise((resolve, reject) => {
      const timer = timeoutMs === undefined ? undefined : setTimeout(() => this.fail(new ReplyError('reply timeout')), timeoutMs)
      this.waiter = { resolve, reject, timer }
    })
  }

  receive(data: Uint8Array): void {
    this.buffer += this.decoder.decode(data, { stream: true })
    let nl: number
    while ((nl = this.buffer.indexOf('\r\n')) >= 0) {
      const line = this.buffer.slice(0, nl)
      this.buffer = this.buffer.slice(nl + 2)
      this.lines.push(line)
      // 'NNN-text' continues a multi-line reply; 'NNN text' or 'NNN' ends it.
      if (line.charAt(3) === '-') continue
      const reply = { code: Number(line.slice(0, 3)), text: this.lines.join('\n') }
      this.lines = []
      const waiter = this.waiter
      if (waiter) {
        this.waiter = null
        this.waitingSince = 0
        clearTimeout(waiter.timer)
        waiter.resolve(reply)
      } else {
        this.ready.push(reply)
      }
    }
  }

  fail(error: Error): void {
    this.closed = true
    const waiter = this.waiter
    this.waiter = null
    this.waitingSince = 0
    if (waiter) {
      clearTimeout(waiter.timer)
      waiter.reject(error)
    }
  }

  close(): void {
    if (!this.closed) this.socket?.end()
    this.fail(new ReplyError('closed by client'))
  }
}
