/**
 * The client side of the waiters benchmark, in a process of its own:
 * `bun test/bench/waiters-client.ts http <port> <count> <api-key> <inbox-ids-file>` opens
 * `count` connections, each a long-poll `GET /v1/emails?wait=60&inbox_id=...` over the inboxes
 * in turn; `bun test/bench/waiters-client.ts smtp <port> <count>` opens `count` SMTP sessions
 * that say EHLO and then stay idle. Connections open 200 at a time. Prints one JSON line once
 * all are open (`opened`, `failed`), then one more (`answered`: long-polls answered, with the
 * number of messages each held; `closed`) each time a line arrives on stdin; exits on `exit`.
 */
import net from 'node:net'

const [mode, portArg, countArg, key, inboxFile] = process.argv.slice(2)
const port = Number(portArg)
const count = Number(countArg)
const inboxes = mode === 'http' ? ((await Bun.file(inboxFile!).json()) as string[]) : []
const since = new Date().toISOString()
let failed = 0
let closed = 0
const answered: number[] = []
const sockets: net.Socket[] = []

function open(i: number): Promise<void> {
  return new Promise(resolve => {
    const socket = net.connect(port, '127.0.0.1')
    sockets.push(socket)
    let text = ''
    let ready = false
    let greeted = false
    const done = () => {
      if (!ready) (ready = true), resolve()
    }
    socket.on('error', () => {
      failed++
      done()
    })
    socket.on('close', () => closed++)
    socket.on('connect', () => {
      if (mode === 'http') {
        socket.write(
          `GET /v1/emails?wait=60&limit=10&since=${encodeURIComponent(since)}&inbox_id=${inboxes[i % inboxes.length]} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer ${key}\r\n\r\n`,
        )
        done()
      }
    })
    socket.on('data', chunk => {
      text += chunk.toString()
      if (mode === 'smtp') {
        if (!greeted && /^220 .*\r\n/m.test(text)) {
          greeted = true
          text = ''
          socket.write('EHLO waiter.bench.example\r\n')
        } else if (greeted && /^250 .*\r\n/m.test(text)) done()
      } else if (/\r\n\r\n/.test(text) && /"data":\[/.test(text)) {
        const [, body] = text.split('\r\n\r\n')
        try {
          answered.push((JSON.parse(body!) as { data: unknown[] }).data.length)
          text = ''
        } catch {}
      }
    })
  })
}

for (let i = 0; i < count; i += 200) await Promise.all(Array.from({ length: Math.min(200, count - i) }, (_, j) => open(i + j)))
console.log(JSON.stringify({ opened: count - failed, failed }))
for await (const line of console) {
  if (line.trim() === 'exit') break
  console.log(JSON.stringify({ answered: answered.length, with_mail: answered.filter(n => n > 0).length, closed }))
}
for (const s of sockets) s.destroy()
process.exit(0)
