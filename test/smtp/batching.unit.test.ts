import { describe, expect, test } from 'bun:test'
import { SmtpSession, type SessionIO } from '../../src/smtp/session'
import type { SmtpHooks } from '../../src/smtp/types'

const enc = new TextEncoder()

/** Records every SessionIO.write separately, and what had been written when the transport was asked to act. */
class CountingIO implements SessionIO {
  writes: string[] = []
  writtenAtClose: string[] | null = null
  writtenAtStartTls: string[] | null = null
  write(text: string) {
    this.writes.push(text)
  }
  close() {
    this.writtenAtClose = [...this.writes]
  }
  startTls() {
    this.writtenAtStartTls = [...this.writes]
  }
  /** Reply codes (final lines) per write since the last call. */
  take(): string[][] {
    const out = this.writes.map(w =>
      w
        .split('\r\n')
        .filter(l => /^\d{3} /.test(l))
        .map(l => l.slice(0, 3)),
    )
    this.writes = []
    return out
  }
}

async function setup(hooks: Partial<SmtpHooks> = {}) {
  const io = new CountingIO()
  const all: SmtpHooks = { onRcptTo: async () => {}, onData: async () => {}, ...hooks }
  const session = new SmtpSession({ hostname: 'mx.test', maxMessageBytes: 10_000, maxRecipients: 10, maxBadCommands: 5, tlsAvailable: true }, all, io, {
    id: 'batch1',
    remoteAddress: '192.0.2.9',
  })
  await session.start()
  expect(io.take()).toEqual([['220']])
  return { session, io, receive: (s: string) => session.receive(enc.encode(s)) }
}

const GROUP = 'EHLO c.example\r\nMAIL FROM:<a@b.example>\r\nRCPT TO:<x@mx.test>\r\nDATA\r\n'

describe('reply batching', () => {
  test('a pipelined group is answered with one write', async () => {
    const { io, receive } = await setup()
    await receive(GROUP)
    expect(io.take()).toEqual([['250', '250', '250', '354']])
    // The end of data, the next transaction and QUIT in one chunk: one write, then the close.
    await receive('hello\r\n.\r\nRSET\r\nMAIL FROM:<a@b.example>\r\nRCPT TO:<y@mx.test>\r\nDATA\r\nx\r\n.\r\nQUIT\r\n')
    expect(io.writtenAtClose?.length).toBe(1)
    expect(io.take()).toEqual([['250', '250', '250', '250', '354', '250', '221']])
  })

  test('one write per received chunk, also when the chunks queue up behind each other', async () => {
    const { io, session } = await setup()
    const a = session.receive(enc.encode('EHLO c\r\nNOOP\r\n'))
    const b = session.receive(enc.encode('NOOP\r\nHELP\r\n'))
    await Promise.all([a, b])
    const writes = io.take()
    expect(writes.flat()).toEqual(['250', '250', '250', '214'])
    expect(writes.length).toBeLessThanOrEqual(2)
  })

  test('hooks that answer at once (sync or already-settled) keep the batch together', async () => {
    const { io, receive } = await setup({
      onMailFrom: () => Promise.resolve(),
      onRcptTo: (() => undefined) as unknown as SmtpHooks['onRcptTo'],
    })
    await receive(GROUP)
    expect(io.take()).toEqual([['250', '250', '250', '354']])
  })

  test('replies already produced are written before a hook that is still running is awaited', async () => {
    let release!: () => void
    const { io, receive, session } = await setup({ onRcptTo: () => new Promise<void>(r => (release = r)) })
    const done = receive(GROUP + 'NOOP\r\n')
    await Bun.sleep(5)
    expect(session.waitingOnHook).toBe(true)
    // EHLO and MAIL were answered before the hook was waited on, not after it.
    expect(io.take()).toEqual([['250', '250']])
    release()
    await done
    expect(io.take()).toEqual([['250', '354']])
  })

  test('a hook that fails after a wait still answers the rest of the group in one write', async () => {
    const { io, receive } = await setup({
      onRcptTo: async () => {
        await Bun.sleep(1)
        throw new Error('db down')
      },
    })
    await receive(GROUP)
    expect(io.take()).toEqual([
      ['250', '250'],
      ['451', '554'],
    ])
  })

  test('STARTTLS: the 220 is handed to the transport before the handshake is started', async () => {
    const { io, receive } = await setup()
    await receive('EHLO c\r\nSTARTTLS\r\n')
    expect(io.writtenAtStartTls?.join('')).toEndWith('220 2.0.0 ready to start TLS\r\n')
    expect(io.take()).toEqual([['250', '220']])
  })

  test('too many errors: the 421 is written before the close', async () => {
    const { io, receive } = await setup()
    await receive('BOGUS\r\n'.repeat(6))
    expect(io.writtenAtClose?.join('')).toEndWith('421 4.7.0 mx.test too many errors, closing connection\r\n')
    expect(io.take()).toEqual([['500', '500', '500', '500', '500', '421']])
  })

  test('a long pipelined run is written in pieces, none of them large', async () => {
    const { io, receive } = await setup()
    await receive('EHLO c\r\n' + 'NOOP\r\n'.repeat(5000))
    const sizes = io.writes.map(w => w.length)
    expect(sizes.length).toBeGreaterThan(1)
    expect(Math.max(...sizes)).toBeLessThan(17 * 1024)
    expect(io.take().flat().length).toBe(5001)
  })

  test('outside the pump (idle timeout) a reply is written at once', async () => {
    const { io, session } = await setup()
    session.idleTimeout()
    expect(io.writtenAtClose).toEqual(['421 4.4.2 mx.test idle timeout, closing connection\r\n'])
  })
})
