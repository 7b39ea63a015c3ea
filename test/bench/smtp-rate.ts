/**
 * An SMTP load generator at a steady offered rate, run as its own process:
 * `bun test/bench/smtp-rate.ts <port> <sessions> <rate> <count> <mail-from> <rcpt-to> <template-file> <mark-prefix>`.
 *
 * Message i (0 <= i < count) is due at start + i / rate. `sessions` connections (EHLO once)
 * take the next message in turn, wait until it is due and deliver it (RSET, MAIL FROM, RCPT TO,
 * DATA pipelined, then the message, then the end of data); when every session is busy the
 * messages go out late, and the lag says so. `rcpt-to` is one address, or `@<file>`: a JSON array
 * of addresses, message i going to the (i mod length)-th. Each message is the template with `@@MARK@@`
 * replaced by `<mark-prefix>-<i> t=<epoch ms>`, the time it was written, and `@@ID@@` (if
 * present, e.g. in the Message-ID) by `<mark-prefix>-<i>`, so every message is distinct and
 * the receiving end can tell which one it got. The 250 to each message is
 * timestamped on the same epoch clock (performance.timeOrigin + performance.now()).
 *
 * Bounded: `count` messages, every reply wait at most 30 s, the whole process at most
 * count / rate + 60 s. Prints one JSON object: counts, errors, the lag behind the schedule, the
 * accepted rate, end-of-data-to-250 p50/p99, and `acks`, [i, epoch ms of the 250] per message.
 */
import { Conn } from './smtp-client'
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
const recipients = rcptTo.startsWith('@') ? ((await Bun.file(rcptTo.slice(1)).json()) as string[]) : [rcptTo]

const encoder = new TextEncoder()
const template = (await Bun.file(templateFile).text()).replace(/\r?\n/g, '\r\n')
if (!template.includes('@@MARK@@')) throw new Error('the template has no @@MARK@@')
// RFC 5321 4.5.2 dot-stuffing, once for the template (the mark never starts a line); the
// message's last CRLF is the first of the end-of-data marker.
const stuffed = template.replace(/(^|\r\n)\./g, '$1..').replace(/\r\n$/, '')
const endOfData = encoder.encode('\r\n.\r\n')

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
    conn = await Conn.open(port)
    if ((await conn.next(REPLY_TIMEOUT_MS)).code !== 220) throw new Error('no 220 greeting')
    conn.write(encoder.encode('EHLO client.sender.bench.example\r\n'))
    if ((await conn.next(REPLY_TIMEOUT_MS)).code !== 250) throw new Error('EHLO refused')
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
      conn.write(encoder.encode(`RSET\r\nMAIL FROM:<${mailFrom}> SIZE=${body.length + 2}\r\nRCPT TO:<${recipients[i % recipients.length]}>\r\nDATA\r\n`))
      const replies = [
        await conn.next(REPLY_TIMEOUT_MS),
        await conn.next(REPLY_TIMEOUT_MS),
        await conn.next(REPLY_TIMEOUT_MS),
        await conn.next(REPLY_TIMEOUT_MS),
      ]
      if (replies[3]!.code !== 354) {
        error(`transaction: ${replies.map(r => r.text.split('\n')[0]).join(' | ')}`)
        continue
      }
      conn.write(body)
      const sentAt = epochMs()
      conn.write(endOfData)
      const done = await conn.next(REPLY_TIMEOUT_MS)
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
    await conn.next(REPLY_TIMEOUT_MS).catch(() => undefined)
  } catch (e) {
    error((e as Error).message)
  } finally {
    conn.close()
  }
}

const giveUp = setTimeout(
  () => {
    error('gave up 60 s after the schedule ended')
    report()
    process.exit(1)
  },
  deadline - epochMs() + 5_000,
)

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
