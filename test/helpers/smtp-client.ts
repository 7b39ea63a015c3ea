/** A raw SMTP client on a socket: writes bytes as given and reads whole replies (multi-line joined by \n). */
import net from 'node:net'
import tls from 'node:tls'

const cert = await Bun.file(`${import.meta.dir}/../fixtures/tls/cert.pem`).text()

export class RawClient {
  private buffer = ''
  private replies: string[] = []
  private waiters: ((reply: string) => void)[] = []
  readonly closed: Promise<void>

  private constructor(private socket: net.Socket) {
    this.closed = new Promise(resolve => socket.once('close', () => resolve()))
    this.listen(socket)
  }

  static connect(port: number): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => resolve(new RawClient(socket)))
      socket.once('error', reject)
    })
  }

  write(text: string | Uint8Array): void {
    this.socket.write(text)
  }

  /** Resolves with the next complete reply (all its lines, joined by \n). */
  read(): Promise<string> {
    const ready = this.replies.shift()
    if (ready !== undefined) return Promise.resolve(ready)
    return new Promise(resolve => this.waiters.push(resolve))
  }

  async readMany(n: number): Promise<string[]> {
    const out: string[] = []
    for (let i = 0; i < n; i++) out.push(await this.read())
    return out
  }

  async command(text: string): Promise<string> {
    this.write(text + '\r\n')
    return this.read()
  }

  async upgrade(): Promise<void> {
    const secure = tls.connect({ socket: this.socket, servername: 'localhost', ca: cert })
    await new Promise<void>((resolve, reject) => {
      secure.once('secureConnect', resolve)
      secure.once('error', reject)
    })
    this.socket = secure
    this.listen(secure)
  }

  end(): void {
    this.socket.end()
  }

  /** Stops reading for a while so the server's writes pile up against a full socket buffer. */
  async stall(ms: number): Promise<void> {
    this.socket.pause()
    await Bun.sleep(ms)
    this.socket.resume()
  }

  private listen(socket: net.Socket): void {
    socket.on('error', () => {})
    socket.on('data', (chunk: Buffer) => {
      if (socket !== this.socket) return
      this.buffer += chunk.toString('utf8')
      let reply: string[] = []
      for (;;) {
        const eol = this.buffer.indexOf('\r\n')
        if (eol < 0) break
        const line = this.buffer.slice(0, eol)
        this.buffer = this.buffer.slice(eol + 2)
        reply.push(line)
        if (/^\d{3} /.test(line)) {
          this.deliver(reply.join('\n'))
          reply = []
        }
      }
      if (reply.length) this.buffer = reply.map(l => l + '\r\n').join('') + this.buffer
    })
  }

  private deliver(reply: string): void {
    const waiter = this.waiters.shift()
    if (waiter) waiter(reply)
    else this.replies.push(reply)
  }
}
