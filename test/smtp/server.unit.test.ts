import { afterEach, describe, expect, test } from 'bun:test'
import net from 'node:net'
import { startSmtpServer } from '../../src/smtp/server'
import type { SmtpEnvelope, SmtpHooks, SmtpServer, SmtpServerOptions } from '../../src/smtp/types'
import { RawClient } from '../helpers/smtp-client'
import { until } from '../helpers/until'
import { ConnectionBudget } from '../../src/connection-budget'

const fixtures = `${import.meta.dir}/../fixtures/tls`
const cert = await Bun.file(`${fixtures}/cert.pem`).text()
const key = await Bun.file(`${fixtures}/key.pem`).text()

const servers: SmtpServer[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map(s => s.stop(50)))
})

interface Recorder {
  mailFrom: string[]
  messages: { env: SmtpEnvelope; text: string }[]
}

async function start(options: Partial<SmtpServerOptions> = {}, hooks: Partial<SmtpHooks> = {}) {
  const rec: Recorder = { mailFrom: [], messages: [] }
  const server = await startSmtpServer(
    {
      hostname: 'mx.test',
      host: '127.0.0.1',
      port: 0,
      maxMessageBytes: 10_000,
      maxRecipients: 10,
      maxConnections: 10,
      maxBadCommands: 5,
      idleTimeoutMs: 5_000,
      tls: { cert, key },
      ...options,
    },
    {
      onMailFrom: async (_s, env) => void rec.mailFrom.push(env.mailFrom),
      onRcptTo: async () => {},
      onData: async (_s, env, message) => void rec.messages.push({ env, text: new TextDecoder().decode(message) }),
      ...hooks,
    },
  )
  servers.push(server)
  return { server, rec }
}

/** A line-oriented SMTP client over a plain socket that can be upgraded to TLS. */

const code = (reply: string) => reply.slice(0, 3)

describe('SMTP listener (raw sockets)', () => {
  test('pipelined commands in one packet are answered in order', async () => {
    const { server, rec } = await start()
    const c = await RawClient.connect(server.port)
    expect(await c.read()).toBe('220 mx.test ESMTP ready')
    c.write('EHLO c.example\r\nMAIL FROM:<a@b.example>\r\nRCPT TO:<x@mx.test>\r\nRCPT TO:<y@mx.test>\r\nDATA\r\n')
    const replies = await c.readMany(5)
    expect(replies.map(code)).toEqual(['250', '250', '250', '250', '354'])
    expect(replies[0]).toContain('250-PIPELINING')
    c.write('Subject: t\r\n\r\n..body\r\n.\r\nQUIT\r\n')
    expect(await c.readMany(2)).toEqual([expect.stringMatching(/^250 2\.0\.0 /), '221 2.0.0 mx.test closing connection'])
    await c.closed
    expect(rec.messages[0]!.text).toMatch(/^Received: from c\.example \(\[127\.0\.0\.1\]\)\r\n\tby mx\.test with ESMTP id /)
    expect(rec.messages[0]!.text).toEndWith('\r\nSubject: t\r\n\r\n.body\r\n')
  })

  test('commands split across packets', async () => {
    const { server } = await start()
    const c = await RawClient.connect(server.port)
    await c.read()
    for (const piece of ['EH', 'LO c', '\r', '\nNO', 'OP\r\n']) {
      c.write(piece)
      await Bun.sleep(5)
    }
    expect(code(await c.read())).toBe('250')
    expect(await c.read()).toBe('250 2.0.0 OK')
  })

  test('a flood of pipelined commands behind a slow hook is answered completely and in order', async () => {
    // ~600 kB in pauses the socket behind the hook; ~8 MB of replies to a stalled reader overflows
    // the loopback buffers, so partial writes have to wait for drain.
    const { server } = await start({}, { onMailFrom: () => Bun.sleep(50) })
    const c = await RawClient.connect(server.port)
    await c.read()
    const n = 100_000
    c.write('EHLO c\r\nMAIL FROM:<a@b.example>\r\n' + 'HELP\r\n'.repeat(n) + 'QUIT\r\n')
    await c.stall(200)
    const replies = await c.readMany(n + 3)
    expect(replies[1]).toBe('250 2.1.0 OK')
    expect(replies.filter(r => r.startsWith('214 2.0.0 commands:')).length).toBe(n)
    expect(replies.at(-1)).toStartWith('221')
  })

  test('SIZE= over the limit is refused at MAIL', async () => {
    const { server } = await start()
    const c = await RawClient.connect(server.port)
    await c.read()
    await c.command('EHLO c')
    expect(await c.command('MAIL FROM:<a@b.example> SIZE=10001')).toBe('552 5.3.4 message size exceeds fixed maximum of 10000 bytes')
    expect(code(await c.command('MAIL FROM:<a@b.example> SIZE=10000'))).toBe('250')
  })

  test('an oversize message is read to the end, then refused with 552; the connection stays usable', async () => {
    const { server, rec } = await start()
    const c = await RawClient.connect(server.port)
    await c.read()
    c.write('EHLO c\r\nMAIL FROM:<a@b.example>\r\nRCPT TO:<x@mx.test>\r\nDATA\r\n')
    await c.readMany(4)
    const line = 'x'.repeat(998) + '\r\n'
    for (let i = 0; i < 50; i++) c.write(line)
    c.write('.\r\n')
    expect(await c.read()).toBe('552 5.3.4 message exceeds fixed maximum of 10000 bytes')
    expect(await c.command('NOOP')).toBe('250 2.0.0 OK')
    expect(rec.messages).toEqual([])
  })

  test('SMTP smuggling: <LF>.<LF> does not end DATA, the hidden transaction is never run', async () => {
    const { server, rec } = await start()
    const c = await RawClient.connect(server.port)
    await c.read()
    c.write('EHLO c\r\nMAIL FROM:<alice@b.example>\r\nRCPT TO:<x@mx.test>\r\nDATA\r\n')
    await c.readMany(4)
    c.write(
      'Subject: legit\r\n\r\nhi\n.\nMAIL FROM:<ceo@bank.example>\r\nRCPT TO:<x@mx.test>\r\nDATA\r\n' + 'Subject: spoofed\r\n\r\nsend money\r\n.\r\nNOOP\r\n',
    )
    expect(await c.readMany(2)).toEqual(['550 5.6.11 bare CR or LF in message; lines must end with CRLF', '250 2.0.0 OK'])
    expect(rec.mailFrom).toEqual(['alice@b.example'])
    expect(rec.messages).toEqual([])
  })

  test('idle timeout: 421 4.4.2, then the server closes', async () => {
    const { server } = await start({ idleTimeoutMs: 150 })
    // the server's idle timer starts when it accepts the connection
    const started = Date.now()
    const c = await RawClient.connect(server.port)
    await c.read()
    expect(await c.read()).toBe('421 4.4.2 mx.test idle timeout, closing connection')
    await c.closed
    expect(Date.now() - started).toBeGreaterThanOrEqual(140)
  })

  test('a slow hook does not count as client idleness', async () => {
    const { server } = await start({ idleTimeoutMs: 400 }, { onRcptTo: () => Bun.sleep(1000) })
    const c = await RawClient.connect(server.port)
    await c.read()
    c.write('EHLO c\r\nMAIL FROM:<a@b.example>\r\nRCPT TO:<x@mx.test>\r\n')
    expect((await c.readMany(3)).map(code)).toEqual(['250', '250', '250'])
  })

  test('connection cap: the connection beyond maxConnections gets 421 4.7.0 and is closed', async () => {
    const { server } = await start({ maxConnections: 2 })
    const a = await RawClient.connect(server.port)
    const b = await RawClient.connect(server.port)
    await Promise.all([a.read(), b.read()])
    const c = await RawClient.connect(server.port)
    expect(await c.read()).toBe('421 4.7.0 mx.test too many connections, try again later')
    await c.closed
    a.end()
    await a.closed
    await Bun.sleep(20)
    const d = await RawClient.connect(server.port)
    expect(code(await d.read())).toBe('220')
  })

  test("the process's connection budget (its open files, HTTP's connections included) counts too: past it 421 4.7.0, and a closed session gives its place back", async () => {
    const budget = new ConnectionBudget(1)
    const { server } = await start({ budget })
    const a = await RawClient.connect(server.port)
    expect(code(await a.read())).toBe('220')
    const b = await RawClient.connect(server.port)
    expect(await b.read()).toBe('421 4.7.0 mx.test too many connections, try again later')
    await b.closed
    expect(budget.used).toBe(1)
    a.end()
    await a.closed
    await until(
      async () => budget.used,
      n => n === 0,
    )
    const c = await RawClient.connect(server.port)
    expect(code(await c.read())).toBe('220')
  })

  test('bad command cap: 421 and close', async () => {
    const { server } = await start({ maxBadCommands: 2 })
    const c = await RawClient.connect(server.port)
    await c.read()
    c.write('BOGUS\r\nBOGUS\r\nBOGUS\r\nNOOP\r\n')
    expect(await c.readMany(3)).toEqual([
      '500 5.5.1 command not recognized',
      '500 5.5.1 command not recognized',
      '421 4.7.0 mx.test too many errors, closing connection',
    ])
    await c.closed
  })

  test('a command line over 512 octets gets 500 5.5.6', async () => {
    const { server } = await start()
    const c = await RawClient.connect(server.port)
    await c.read()
    expect(await c.command('NOOP ' + 'a'.repeat(600))).toBe('500 5.5.6 line too long')
    expect(await c.command('NOOP')).toBe('250 2.0.0 OK')
  })

  test('STARTTLS: plaintext pipelined after it is discarded, the TLS session starts fresh', async () => {
    const { server, rec } = await start()
    const c = await RawClient.connect(server.port)
    await c.read()
    expect(await c.command('EHLO c')).toContain('250 STARTTLS')
    c.write('STARTTLS\r\nMAIL FROM:<injected@evil.example>\r\n')
    expect(await c.read()).toBe('220 2.0.0 ready to start TLS')
    await c.upgrade()
    expect(await c.command('MAIL FROM:<a@b.example>')).toBe('503 5.5.1 send HELO/EHLO first')
    const ehlo = await c.command('EHLO c')
    expect(ehlo).not.toContain('STARTTLS')
    c.write('MAIL FROM:<a@b.example>\r\nRCPT TO:<x@mx.test>\r\nDATA\r\n')
    expect((await c.readMany(3)).map(code)).toEqual(['250', '250', '354'])
    c.write('hello\r\n.\r\n')
    expect(code(await c.read())).toBe('250')
    expect(rec.mailFrom).toEqual(['a@b.example'])
    expect(rec.messages[0]!.text).toContain('with ESMTPS id')
    expect(await c.command('QUIT')).toStartWith('221')
  })

  test('stop(): idle sessions get 421 4.3.2, a message in onData is finished first', async () => {
    let release!: () => void
    const gate = new Promise<void>(r => (release = r))
    let entered!: () => void
    const inData = new Promise<void>(r => (entered = r))
    const { server } = await start(
      {},
      {
        onData: async () => {
          entered()
          await gate
        },
      },
    )
    const idle = await RawClient.connect(server.port)
    const busy = await RawClient.connect(server.port)
    await Promise.all([idle.read(), busy.read()])
    busy.write('EHLO c\r\nMAIL FROM:<a@b.example>\r\nRCPT TO:<x@mx.test>\r\nDATA\r\n')
    await busy.readMany(4)
    busy.write('hi\r\n.\r\n')
    await inData
    const stopped = server.stop(5_000)
    expect(await idle.read()).toBe('421 4.3.2 mx.test shutting down')
    await idle.closed
    release()
    expect(code(await busy.read())).toBe('250')
    expect(await busy.read()).toBe('421 4.3.2 mx.test shutting down')
    await stopped
    await busy.closed
    await expect(RawClient.connect(server.port)).rejects.toThrow()
  })

  test('stop(): a hook that never finishes is cut off after graceMs', async () => {
    const { server } = await start({}, { onData: () => new Promise(() => {}) })
    const c = await RawClient.connect(server.port)
    await c.read()
    c.write('EHLO c\r\nMAIL FROM:<a@b.example>\r\nRCPT TO:<x@mx.test>\r\nDATA\r\n')
    await c.readMany(4)
    c.write('hi\r\n.\r\n')
    await Bun.sleep(20)
    const started = Date.now()
    await server.stop(100)
    expect(Date.now() - started).toBeGreaterThanOrEqual(90)
    await c.closed
  })

  // That the group is handed to the socket in one write is asserted in batching.unit.test.ts: here the
  // client's read would merge separate segments that arrived together anyway.
  test('a pipelined group is answered together; replies are not held back behind a slow hook', async () => {
    let release!: () => void
    const { server } = await start(
      {},
      { onMailFrom: (_s, env) => (env.mailFrom === 'slow@b.example' ? new Promise<void>(r => (release = r)) : Promise.resolve()) },
    )
    const socket = net.connect(server.port, '127.0.0.1')
    const reads: string[] = []
    socket.on('data', (chunk: Buffer) => reads.push(chunk.toString('latin1')))
    const readsUntil = async (n: number) => {
      for (let i = 0; i < 200 && reads.length < n; i++) await Bun.sleep(5)
      await Bun.sleep(20)
      return reads.splice(0)
    }
    expect(await readsUntil(1)).toEqual(['220 mx.test ESMTP ready\r\n'])
    socket.write('EHLO c.example\r\nMAIL FROM:<a@b.example>\r\nRCPT TO:<x@mx.test>\r\nRCPT TO:<y@mx.test>\r\nDATA\r\n')
    const [group, ...more] = await readsUntil(1)
    expect(more).toEqual([])
    expect(group!.match(/^\d{3} /gm)!.map(l => l.trim())).toEqual(['250', '250', '250', '250', '354'])
    // Behind a hook that takes its time, what was already answered is not held back.
    socket.write('x\r\n.\r\nMAIL FROM:<slow@b.example>\r\nRCPT TO:<x@mx.test>\r\n')
    const beforeHook = (await readsUntil(1)).join('')
    expect(beforeHook).toMatch(/^250 2\.0\.0 OK queued as \S+\r\n$/)
    release()
    expect((await readsUntil(1)).join('')).toBe('250 2.1.0 OK\r\n250 2.1.5 OK\r\n')
    socket.destroy()
  })
})
