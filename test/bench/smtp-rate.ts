/**
 * An SMTP load generator at a steady offered rate, run as its own process:
 * `bun test/bench/smtp-rate.ts <port> <sessions> <rate> <count> <mail-from> <rcpt-to> <template-file> <mark-prefix>`.
 *
 * Message i (0 <= i < count) is due at start + i / rate. `sessions` connections (EHLO once)
 * take the next message in turn, wait until it is due and deliver it (RSET, MAIL FROM, RCPT TO,
 * DATA pipelined, then the message, then the end of data); when every session is busy the
 * messages go out late, and the lag says so. Each message is the template with `@@MARK@@`
 * replaced by `<mark-prefix>-<i> t=<epoch ms>`, the time it was written, and `@@ID@@` (if
 * present, e.g. in the Message-ID) by `<mark-prefix>-<i>`, so every message is distinct and
 * the receiving end can tell which one it got. The 250 to each message is
 * timestamped on the same epoch clock (performance.timeOrigin + performance.now()).
 *
 * Bounded: `count` messages, every reply wait at most 30 s, the whole process at most
 * count / rate + 60 s. Prints one JSON object: counts, errors, the lag behind the schedule, the
 * accepted rate, end-of-data-to-250 p50/p99, and `acks`, [i, epoch ms of the 250] per message.
 */
import type { Socket } from 'bun'
import { epochMs, percentile } from './common'

const [portArg, sessionsArg, rateArg, countArg, mailFrom, rcptTo, templateFile, prefix] = process.argv.slice(2)
if (!portArg || !sessionsArg || !rateArg || !countArg || !mailFrom || !rcptTo || !templateFile || !prefix) {
  throw new Error('usage: smtp-rate.ts <port> <sessions> <rate> <count> <mail-from> <rcpt-to> <template-file> <mark-prefix>')
}
const port = Number(portArg)
const sessions = Number(sessionsArg)
const rate = Number(rateArg)
const count = Number(countArg)
const REPLY_TIMEOUT_MS = 30_000

const encoder = new TextEncoder()
const template = (await Bun.file(templateFile).text()).replace(/\r?\n/g, '\r\n')
if (!template.includes('@@MARK@@')) throw new Error('the template has no @@MARK@@')
// RFC 5321 4.5.2 dot-stuffing, once for the template (the mark never starts a line); the
// message's last CRLF is the first of the end-of-data marker.
const stuffed = template.replace(/(^|\r\n)\./g, '$1..').replace(/\r\n$/, '')
const endOfData = encoder.encode('\r\n.\r\n')

interface Reply {
  code: number
  text: string
}

/** One client connection: writes with backpressure, and SMTP replies (multi-line aware) in order. */
class Conn {
  private socket: Socket<Conn> | null = null
  private decoder = new TextDecoder()
  private buffer = ''
  private lines: string[] = []
  private ready: Reply[] = []
  private waiter: { resolve(r: Reply): void; reject(e: Error): void; timer: ReturnType<typeof setTimeout> } | null = null
  private pending: Uint8Array[] = []
  closed = false

  static open(): Promise<Conn> {
    const conn = new Conn()
    return Bun.connect<Conn>({
      hostname: '127.0.0.1',
      port,
      data: conn,
      socket: {
        open: s => void s.setNoDelay(true),
        data: (s, data) => s.data.receive(data),
        drain: s => s.data.flush(),
        close: s => s.data.fail(new Error('connection closed')),
        error: (s, err) => s.data.fail(err),
        connectError: (s, err) => s.data.fail(err),
      },
    }).then(socket => {
      conn.socket = socket
      return conn
    })
  }

  write(bytes: Uint8Array): void {
    if (this.closed || !this.socket) throw new Error('connection closed')
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

  /** The next reply, in order; fails after REPLY_TIMEOUT_MS. */
  next(): Promise<Reply> {
    const reply = this.ready.shift()
    if (reply) return Promise.resolve(reply)
    if (this.closed) return Promise.reject(new Error('connection closed'))
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => this.fail(new Error('reply timeout')), REPLY_TIMEOUT_MS)
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
      if (line.charAt(3) === '-') continue
      const reply = { code: Number(line.slice(0, 3)), text: this.lines.join('\n') }
      this.lines = []
      const waiter = this.waiter
      if (waiter) {
        this.waiter = null
        clearTimeout(waiter.timer)
        waiter.resolve(reply)
      } else this.ready.push(reply)
    }
  }

  fail(error: Error): void {
    this.closed = true
    const waiter = this.waiter
    this.waiter = null
    if (waiter) {
      clearTimeout(waiter.timer)
      waiter.reject(error)
    }
  }

  close(): void {
    if (!this.closed) this.socket?.end()
    this.fail(new Error('closed by client'))
  }
}

const acks: [number, number][] = []
const dataLatencies: number[] = []
const errorSamples = new Map<string, number>()
let errors = 0
let maxLagMs = 0
let next = 0
const start = epochMs() + 200 // time for every session to connect first
const deadline = start + (count / rate) * 1000 + 60_000

function error(what: string) {
  errors++
  errorSamples.set(what, (errorSamples.get(what) ?? 0) + 1)
}

async function session(): Promise<void> {
  let conn: Conn
  try {
    conn = await Conn.open()
    if ((await conn.next()).code !== 220) throw new Error('no 220 greeting')
    conn.write(encoder.encode('EHLO client.sender.bench.example\r\n'))
    if ((await conn.next()).code !== 250) throw new Error('EHLO refused')
  } catch (e) {
    return error(`connect: ${(e as Error).message}`)
  }
  try {
    while (next < count && epochMs() < deadline) {
      const i = next++
      const due = start + (i * 1000) / rate
      const wait = due - epochMs()
      if (wait > 0) await Bun.sleep(wait)
      const now = epochMs()
      maxLagMs = Math.max(maxLagMs, now - due)
      const body = encoder.encode(stuffed.replace('@@MARK@@', `${prefix}-${i} t=${now.toFixed(1)}`).replace('@@ID@@', `${prefix}-${i}`))
      conn.write(encoder.encode(`RSET\r\nMAIL FROM:<${mailFrom}> SIZE=${body.length + 2}\r\nRCPT TO:<${rcptTo}>\r\nDATA\r\n`))
      const replies = [await conn.next(), await conn.next(), await conn.next(), await conn.next()]
      if (replies[3]!.code !== 354) {
        error(`transaction: ${replies.map(r => r.text.split('\n')[0]).join(' | ')}`)
        continue
      }
      conn.write(body)
      const sentAt = epochMs()
      conn.write(endOfData)
      const done = await conn.next()
      const ackAt = epochMs()
      const failed = [...replies.slice(0, 3), done].find(r => r.code !== 250)
      if (failed) {
        error(failed.text.split('\n')[0]!)
        continue
      }
      acks.push([i, ackAt])
      dataLatencies.push(ackAt - sentAt)
    }
    conn.write(encoder.encode('QUIT\r\n'))
    await conn.next().catch(() => undefined)
  } catch (e) {
    error((e as Error).message)
  } finally {
    conn.close()
  }
}

const giveUp = setTimeout(() => {
  error('gave up 60 s after the schedule ended')
  report()
  process.exit(1)
}, deadline - epochMs() + 5_000)

function report() {
  for (const [what, n] of errorSamples) console.error(`smtp-rate: ${n} x ${what}`)
  dataLatencies.sort((a, b) => a - b)
  const lastAck = acks.reduce((m, [, t]) => Math.max(m, t), start)
  console.log(
    JSON.stringify({
      count,
      acked: acks.length,
      errors,
      offered_rate: rate,
      started_at: start,
      accepted_per_s: Math.round(acks.length / ((lastAck - start) / 1000)),
      max_lag_ms: Math.round(maxLagMs),
      data_p50_ms: percentile(dataLatencies, 50),
      data_p99_ms: percentile(dataLatencies, 99),
      acks,
    }),
  )
}

await Promise.all(Array.from({ length: sessions }, session))
clearTimeout(giveUp)
report()
