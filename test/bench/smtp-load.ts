/**
 * A closed-loop SMTP load generator, run as its own process so it does not share an event loop
 * with the server: `bun test/bench/smtp-load.ts <port> <sessions> <seconds> <mail-from> <rcpt-to> <message-file>`.
 *
 * Speaks SMTP itself over raw loopback sockets (Bun.connect): each session is one connection,
 * greeted and EHLO'd once, then delivers the message again and again until the time is up,
 * pipelining (RFC 2920, advertised by every target) `RSET, MAIL FROM, RCPT TO, DATA` in one
 * write, then the dot-stuffed message, then the end of data. Latency is measured per message
 * from writing the final `<CRLF>.<CRLF>` to receiving the reply to it, i.e. the receiver's own
 * processing (parse, authenticate, commit) plus one loopback round trip.
 *
 * The first second is warm-up and not counted; messages started after it are. Every wait for a
 * reply is bounded (a stalled session is failed after 30 s) and the whole process gives up
 * 60 s after its deadline. Prints one JSON object: messages (counted, after warm-up), completed
 * (all answered 250), errors, messages per second, p50/p99 latency in ms, and this process's
 * own CPU time per completed message (it shares the machine with the server).
 */
import { Conn, ReplyError } from './smtp-client'

const [portArg, sessionsArg = '20', secondsArg = '5', mailFrom, rcptTo, messageFile] = process.argv.slice(2)
if (!portArg || !mailFrom || !rcptTo || !messageFile) {
  throw new Error('usage: smtp-load.ts <port> <sessions> <seconds> <mail-from> <rcpt-to> <message-file>')
}
const port = Number(portArg)
const sessions = Number(sessionsArg)
const durationMs = Number(secondsArg) * 1000
const REPLY_TIMEOUT_MS = 30_000
const WARMUP_MS = 1000

const encoder = new TextEncoder()
const raw = (await Bun.file(messageFile).text()).replace(/\r?\n/g, '\r\n')
// RFC 5321 4.5.2: a line starting with '.' gets another one. The last CRLF of the message is
// the first CRLF of the end-of-data marker, so it is sent with the marker.
const stuffed = raw.replace(/(^|\r\n)\./g, '$1..').replace(/\r\n$/, '')
const body = encoder.encode(stuffed)
const endOfData = encoder.encode('\r\n.\r\n')
// Each transaction has a sender of its own (a +tag of the same domain: SPF and DMARC read the
// domain), so the receiver stores each message anew rather than take it for a resend of the
// first (mail/inbound/receipts.ts recognizes the envelope with the Message-ID and the body).
const [senderLocal, senderDomain] = [mailFrom.slice(0, mailFrom.lastIndexOf('@')), mailFrom.slice(mailFrom.lastIndexOf('@') + 1)]
let transactions = 0
const transaction = () =>
  encoder.encode(`RSET\r\nMAIL FROM:<${senderLocal}+${process.pid}.${++transactions}@${senderDomain}> SIZE=${raw.length}\r\nRCPT TO:<${rcptTo}>\r\nDATA\r\n`)

const latencies: number[] = []
/** every message answered 250, warm-up included (for CPU per message) */
let completed = 0
let errors = 0
const errorSamples = new Map<string, number>()
const started = performance.now()
const warmupEnd = started + WARMUP_MS
const end = warmupEnd + durationMs
const conns = new Set<Conn>()

function error(what: string) {
  errors++
  errorSamples.set(what, (errorSamples.get(what) ?? 0) + 1)
}

async function expectReply(conn: Conn, code: number, what: string): Promise<void> {
  const reply = await conn.next()
  if (reply.code !== code) throw new ReplyError(`${what}: ${reply.text}`)
}

async function session(): Promise<void> {
  let conn: Conn
  try {
    conn = await Conn.open(port)
  } catch (e) {
    return error(`connect: ${(e as Error).message}`)
  }
  conns.add(conn)
  try {
    await expectReply(conn, 220, 'greeting')
    conn.write(encoder.encode('EHLO client.sender.bench.example\r\n'))
    await expectReply(conn, 250, 'EHLO')
    while (performance.now() < end) {
      conn.write(transaction())
      const replies = [await conn.next(), await conn.next(), await conn.next(), await conn.next()]
      if (replies[3]!.code !== 354) {
        error(`transaction: ${replies.map(r => r.text.split('\n')[0]).join(' | ')}`)
        continue
      }
      conn.write(body)
      const sentAt = performance.now()
      conn.write(endOfData)
      const done = await conn.next()
      const failed = [...replies.slice(0, 3), done].find(r => r.code !== 250)
      if (failed) {
        error(failed.text.split('\n')[0]!)
        continue
      }
      completed++
      if (sentAt >= warmupEnd) latencies.push(performance.now() - sentAt)
    }
    conn.write(encoder.encode('QUIT\r\n'))
    await conn.next().catch(() => undefined)
  } catch (e) {
    error((e as Error).message)
  } finally {
    conn.close()
    conns.delete(conn)
  }
}

// Every wait is bounded: a session stuck on a reply is failed, and the process gives up at last.
const watchdog = setInterval(() => {
  const now = performance.now()
  for (const conn of conns) if (conn.waitingSince && now - conn.waitingSince > REPLY_TIMEOUT_MS) conn.fail(new ReplyError('reply timeout'))
}, 1000)
const giveUp = setTimeout(
  () => {
    error('load generator gave up 60 s after its deadline')
    report()
    process.exit(1)
  },
  end - started + 60_000,
)

function report() {
  latencies.sort((a, b) => a - b)
  const pct = (p: number) => Math.round((latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0) * 100) / 100
  for (const [what, count] of errorSamples) console.error(`smtp-load: ${count} x ${what}`)
  const cpu = process.cpuUsage(cpuStart)
  console.log(
    JSON.stringify({
      sessions,
      messages: latencies.length,
      completed,
      errors,
      mps: Math.round(latencies.length / (durationMs / 1000)),
      p50_ms: pct(50),
      p99_ms: pct(99),
      client_cpu_us_per_msg: completed ? Math.round((cpu.user + cpu.system) / completed) : 0,
    }),
  )
}

const cpuStart = process.cpuUsage()
await Promise.all(Array.from({ length: sessions }, session))
clearInterval(watchdog)
clearTimeout(giveUp)
report()
