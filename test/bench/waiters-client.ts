/**
 * The client side of the waiters benchmark, in a process of its own:
 * `bun test/bench/waiters-client.ts http <port> <count> <api-key> <inbox-ids-file>` opens
 * `count` connections, each a long-poll `GET /v1/emails?wait=60&inbox_id=...` over the inboxes
 * in turn (connection j waits on inbox j mod the inboxes); `bun test/bench/waiters-client.ts
 * smtp <port> <count>` opens `count` SMTP sessions that say EHLO and then stay idle.
 * Connections open 200 at a time.
 *
 * A long-poll that is answered is asked again at once on its connection (keep-alive), with
 * `since` the newest `received_at` it was given, as an agent waiting for its mail does. Each
 * message of an answer whose subject carries a mark `<prefix>-<i> ` (smtp-rate.ts) is noted with
 * the epoch time the answer was complete (common.ts `epochMs`, the sender's clock).
 *
 * Prints one JSON line once all are open (`opened`, `failed`), then one line per line on stdin:
 * `report` gives the counts (`answered`: long-polls answered, `with_mail`: those that held mail,
 * `closed`, `errors`: answers that were not 200); `arrivals` gives them with `arrivals`, a list of
 * [i, epoch ms, connection] per marked message received since the last `arrivals`; `exit` ends it.
 */
import net from 'node:net'
import { epochMs } from './common'

const [mode, portArg, countArg, key, inboxFile] = process.argv.slice(2)
const port = Number(portArg)
const count = Number(countArg)
const inboxes = mode === 'http' ? ((await Bun.file(inboxFile!).json()) as string[]) : []
const start = new Date().toISOString()
const MARK = /\b[a-z]+-(\d+) /
let failed = 0
let closed = 0
let answered = 0
let withMail = 0
let errors = 0
let arrivals: [number, number, number][] = []
const sockets: net.Socket[] = []

const request = (inbox: string, since: string) =>
  `GET /v1/emails?wait=60&limit=10&since=${encodeURIComponent(since)}&inbox_id=${inbox} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer ${key}\r\n\r\n`

/** One long-poll connection: asks, reads each answer by its content-length, notes its marks and asks again. */
function poll(socket: net.Socket, j: number) {
  const inbox = inboxes[j % inboxes.length]!
  let since = start
  let buffered: Buffer = Buffer.alloc(0)
  socket.on('connect', () => socket.write(request(inbox, since)))
  socket.on('data', (chunk: Buffer) => {
    buffered = buffered.length ? Buffer.concat([buffered, chunk]) : chunk
    for (;;) {
      const head = buffered.indexOf('\r\n\r\n')
      if (head < 0) return
      const headers = buffered.subarray(0, head).toString()
      const length = Number(headers.match(/\r\ncontent-length: *(\d+)/i)?.[1] ?? 0)
      if (buffered.length < head + 4 + length) return
      const at = epochMs()
      const body = buffered.subarray(head + 4, head + 4 + length).toString()
      buffered = buffered.subarray(head + 4 + length)
      answered++
      if (!headers.startsWith('HTTP/1.1 200')) {
        errors++
        continue
      }
      const { data } = JSON.parse(body) as { data: { subject: string; received_at: string }[] }
      if (data.length) {
        withMail++
        since = data[0]!.received_at
      }
      for (const { subject } of data) {
        const mark = subject.match(MARK)
        if (mark) arrivals.push([Number(mark[1]), at, j])
      }
      socket.write(request(inbox, since))
    }
  })
}

/** One idle SMTP session: EHLO, then nothing. */
function idle(socket: net.Socket, done: () => void) {
  let text = ''
  let greeted = false
  socket.on('data', chunk => {
    text += chunk.toString()
    if (!greeted && /^220 .*\r\n/m.test(text)) {
      greeted = true
      text = ''
      socket.write('EHLO waiter.bench.example\r\n')
    } else if (greeted && /^250 .*\r\n/m.test(text)) done()
  })
}

function open(j: number): Promise<void> {
  return new Promise(resolve => {
    const socket = net.connect(port, '127.0.0.1')
    sockets.push(socket)
    let ready = false
    const done = () => {
      if (!ready) (ready = true), resolve()
    }
    socket.on('error', () => {
      failed++
      done()
    })
    socket.on('close', () => closed++)
    if (mode === 'http') {
      poll(socket, j)
      socket.on('connect', done)
    } else idle(socket, done)
  })
}

for (let i = 0; i < count; i += 200) await Promise.all(Array.from({ length: Math.min(200, count - i) }, (_, j) => open(i + j)))
console.log(JSON.stringify({ opened: count - failed, failed }))
for await (const line of console) {
  const command = line.trim()
  if (command === 'exit') break
  const counts = { answered, with_mail: withMail, closed, errors }
  if (command === 'arrivals') {
    console.log(JSON.stringify({ ...counts, arrivals }))
    arrivals = []
  } else console.log(JSON.stringify(counts))
}
for (const s of sockets) s.destroy()
process.exit(0)
