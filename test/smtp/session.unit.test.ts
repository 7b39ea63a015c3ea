import { describe, expect, test } from 'bun:test'
import { parseMailbox } from '../../src/smtp/address'
import { DataReader } from '../../src/smtp/data-reader'
import { SmtpSession, type SessionIO, type SessionOptions } from '../../src/smtp/session'
import type { SmtpEnvelope, SmtpHooks, SmtpReply, SmtpSessionInfo } from '../../src/smtp/types'

const enc = new TextEncoder()
const dec = new TextDecoder()

class FakeIO implements SessionIO {
  out = ''
  closed = false
  tlsRequested = false
  paused = false
  write(text: string) {
    this.out += text
  }
  close() {
    this.closed = true
  }
  startTls() {
    this.tlsRequested = true
  }
  pause() {
    this.paused = true
  }
  resume() {
    this.paused = false
  }
  /** Reply lines written since the last call. */
  take(): string[] {
    const lines = this.out.split('\r\n').filter(l => l !== '')
    this.out = ''
    return lines
  }
}

const DATE = new Date(Date.UTC(2025, 0, 2, 3, 4, 5))
const baseOptions: SessionOptions = {
  hostname: 'mx.test',
  maxMessageBytes: 1000,
  maxRecipients: 3,
  maxBadCommands: 3,
  tlsAvailable: true,
  now: () => DATE,
}

interface Delivery {
  env: SmtpEnvelope
  info: SmtpSessionInfo
  message: string
}

async function setup(hooks: Partial<SmtpHooks> = {}, options: Partial<SessionOptions> = {}) {
  const io = new FakeIO()
  const calls: string[] = []
  const delivered: Delivery[] = []
  const all: SmtpHooks = {
    onMailFrom: async (_s, env) => void calls.push(`mail:${env.mailFrom}`),
    onRcptTo: async (_s, _env, rcpt) => void calls.push(`rcpt:${rcpt}`),
    onData: async (info, env, message) => {
      calls.push('data')
      delivered.push({ info, env, message: dec.decode(message) })
    },
    ...hooks,
  }
  const session = new SmtpSession({ ...baseOptions, ...options }, all, io, { id: 'abc123', remoteAddress: '192.0.2.7' })
  await session.start()
  const greeting = io.take()
  const send = async (input: string | Uint8Array) => {
    await session.receive(typeof input === 'string' ? enc.encode(input) : input)
    return io.take()
  }
  return { session, io, calls, delivered, greeting, send }
}

/** The final line of each reply (the one with a space after the code). */
function finals(lines: string[]): string[] {
  return lines.filter(l => /^\d{3} /.test(l))
}

function codes(lines: string[]): string[] {
  return finals(lines).map(l => l.slice(0, 3))
}

/** The message without the Received header (which ends with the date line). */
function body(s: string): string {
  return s.slice(s.indexOf('+0000\r\n') + 7)
}

const ENVELOPE = 'EHLO client.example\r\nMAIL FROM:<alice@example.org>\r\nRCPT TO:<bob@mx.test>\r\nDATA\r\n'

describe('greeting and EHLO', () => {
  test('banner carries the hostname and no enhanced code', async () => {
    const { greeting } = await setup()
    expect(greeting).toEqual(['220 mx.test ESMTP ready'])
  })

  test('EHLO advertises the extensions, STARTTLS only when available', async () => {
    const { send } = await setup()
    expect(await send('EHLO client.example\r\n')).toEqual([
      '250-mx.test greets client.example',
      '250-PIPELINING',
      '250-SIZE 1000',
      '250-8BITMIME',
      '250-SMTPUTF8',
      '250-ENHANCEDSTATUSCODES',
      '250 STARTTLS',
    ])
    const plain = await setup({}, { tlsAvailable: false })
    expect((await plain.send('EHLO x\r\n')).at(-1)).toBe('250 ENHANCEDSTATUSCODES')
  })

  test('HELO gets a one-line reply; ESMTP parameters then are refused', async () => {
    const { send } = await setup()
    expect(await send('HELO client.example\r\n')).toEqual(['250 mx.test'])
    expect(await send('MAIL FROM:<a@b.c> SIZE=10\r\n')).toEqual(['555 5.5.4 parameters require EHLO'])
  })

  test('EHLO needs exactly one argument', async () => {
    const { send } = await setup()
    expect(codes(await send('EHLO\r\nEHLO a b\r\n'))).toEqual(['501', '501'])
  })

  test('commands sent before the greeting are answered after it', async () => {
    let open!: () => void
    const io = new FakeIO()
    const hooks: SmtpHooks = { onConnect: () => new Promise(r => (open = r)), onRcptTo: async () => {}, onData: async () => {} }
    const session = new SmtpSession(baseOptions, hooks, io, { remoteAddress: '192.0.2.7' })
    const started = session.start()
    void session.receive(enc.encode('EHLO early\r\n'))
    expect(io.take()).toEqual([])
    open()
    await started
    expect(finals(io.take())).toEqual(['220 mx.test ESMTP ready', '250 STARTTLS'])
    expect(session.id).toMatch(/^[0-9a-f]{16}$/)
  })

  test('a bare LF ends a command line (only DATA insists on CRLF)', async () => {
    const { send } = await setup()
    expect(codes(await send('HELO x\nNOOP\n'))).toEqual(['250', '250'])
  })
})

describe('mail transaction', () => {
  test('delivers the message with a Received header and replies 250 2.0.0', async () => {
    const { send, delivered, session, calls } = await setup()
    const lines = await send(ENVELOPE + 'Subject: hi\r\n\r\nHello\r\n.\r\n')
    expect(finals(lines)).toEqual(['250 STARTTLS', '250 2.1.0 OK', '250 2.1.5 OK', '354 End data with <CR><LF>.<CR><LF>', '250 2.0.0 OK queued as abc123-1'])
    expect(calls).toEqual(['mail:alice@example.org', 'rcpt:bob@mx.test', 'data'])
    expect(delivered[0]!.message).toBe(
      'Received: from client.example ([192.0.2.7])\r\n' +
        '\tby mx.test with ESMTP id abc123-1\r\n' +
        '\tfor <bob@mx.test>;\r\n' +
        '\tThu, 02 Jan 2025 03:04:05 +0000\r\n' +
        'Subject: hi\r\n\r\nHello\r\n',
    )
    expect(delivered[0]!.env).toEqual({ mailFrom: 'alice@example.org', rcptTo: ['bob@mx.test'], smtputf8: false, notes: new Map() })
    expect(delivered[0]!.info).toEqual({ id: 'abc123', remoteAddress: '192.0.2.7', helo: 'client.example', tls: false })
    expect(session.messages).toBe(1)
  })

  test('Received names no recipient when there are several (Bcc privacy)', async () => {
    const { send, delivered } = await setup()
    await send('EHLO c\r\nMAIL FROM:<a@b.c>\r\nRCPT TO:<x@mx.test>\r\nRCPT TO:<y@mx.test>\r\nDATA\r\nhi\r\n.\r\n')
    expect(delivered[0]!.message).toStartWith('Received: from c ([192.0.2.7])\r\n\tby mx.test with ESMTP id abc123-1;\r\n\tThu,')
    expect(delivered[0]!.env.rcptTo).toEqual(['x@mx.test', 'y@mx.test'])
  })

  test('HELO sessions are stamped SMTP, SMTPUTF8 ones UTF8SMTP', async () => {
    const a = await setup()
    await a.send('HELO c\r\nMAIL FROM:<a@b.c>\r\nRCPT TO:<x@mx.test>\r\nDATA\r\nhi\r\n.\r\n')
    expect(a.delivered[0]!.message).toContain('with SMTP id')
    const b = await setup()
    await b.send('EHLO c\r\nMAIL FROM:<jürgen@b.c> SMTPUTF8\r\nRCPT TO:<x@mx.test>\r\nDATA\r\nhi\r\n.\r\n')
    expect(b.delivered[0]!.message).toContain('with UTF8SMTP id')
    expect(b.delivered[0]!.env.smtputf8).toBe(true)
  })

  test('the null sender and MAIL parameters are parsed into the envelope', async () => {
    const { send, delivered } = await setup()
    const lines = await send('EHLO c\r\nMAIL FROM:<> SIZE=12 BODY=8bitmime\r\nRCPT TO:<x@mx.test>\r\nDATA\r\nhi\r\n.\r\n')
    expect(codes(lines)).toEqual(['250', '250', '250', '354', '250'])
    expect(delivered[0]!.env).toEqual({ mailFrom: '', rcptTo: ['x@mx.test'], size: 12, body: '8BITMIME', smtputf8: false, notes: new Map() })
  })

  test('notes a hook makes on a transaction reach its later hooks, and no other transaction', async () => {
    const seen: string[][] = []
    const { send } = await setup({
      onRcptTo: async (_s, env, rcpt) => void env.notes.set(rcpt, `looked up ${rcpt}`),
      onData: async (_s, env) => void seen.push([...env.notes.values()] as string[]),
    })
    await send('EHLO c\r\nMAIL FROM:<a@b.c>\r\nRCPT TO:<x@mx.test>\r\nRCPT TO:<y@mx.test>\r\nDATA\r\none\r\n.\r\n')
    // a transaction given up (RSET) takes its notes with it
    await send('MAIL FROM:<a@b.c>\r\nRCPT TO:<z@mx.test>\r\nRSET\r\nMAIL FROM:<a@b.c>\r\nRCPT TO:<y@mx.test>\r\nDATA\r\ntwo\r\n.\r\n')
    expect(seen).toEqual([['looked up x@mx.test', 'looked up y@mx.test'], ['looked up y@mx.test']])
  })

  test('transaction ends after DATA; a second one works on the same connection', async () => {
    const { send, delivered } = await setup()
    await send(ENVELOPE + 'one\r\n.\r\n')
    const lines = await send('MAIL FROM:<c@d.e>\r\nRCPT TO:<bob@mx.test>\r\nDATA\r\ntwo\r\n.\r\n')
    expect(codes(lines)).toEqual(['250', '250', '354', '250'])
    expect(finals(lines).at(-1)).toBe('250 2.0.0 OK queued as abc123-2')
    expect(delivered.map(d => body(d.message))).toEqual(['one\r\n', 'two\r\n'])
  })

  test('RSET, NOOP, VRFY, HELP, QUIT', async () => {
    const { send, session, io } = await setup()
    const lines = await send('EHLO c\r\nMAIL FROM:<a@b.c>\r\nRSET\r\nRCPT TO:<x@mx.test>\r\nNOOP\r\nVRFY bob\r\nHELP\r\nQUIT\r\n')
    expect(
      finals(lines)
        .slice(1)
        .map(l => l.slice(0, 9)),
    ).toEqual(['250 2.1.0', '250 2.0.0', '503 5.5.1', '250 2.0.0', '252 2.5.0', '214 2.0.0', '221 2.0.0'])
    expect(io.closed).toBe(true)
    expect(session.outcome).toBe('quit')
  })

  test('commands pipelined after QUIT are ignored', async () => {
    const { send, calls } = await setup()
    expect(codes(await send('QUIT\r\nEHLO c\r\nMAIL FROM:<a@b.c>\r\n'))).toEqual(['221'])
    expect(calls).toEqual([])
  })
})

describe('sequencing and syntax errors', () => {
  test('out-of-order commands get 503 5.5.1', async () => {
    const { send } = await setup({}, { maxBadCommands: 10 })
    expect(finals(await send('MAIL FROM:<a@b.c>\r\n'))).toEqual(['503 5.5.1 send HELO/EHLO first'])
    await send('EHLO c\r\n')
    expect(finals(await send('RCPT TO:<x@mx.test>\r\n'))).toEqual(['503 5.5.1 need MAIL before RCPT'])
    expect(finals(await send('DATA\r\n'))).toEqual(['503 5.5.1 need MAIL before DATA'])
    await send('MAIL FROM:<a@b.c>\r\n')
    expect(finals(await send('MAIL FROM:<a@b.c>\r\n'))).toEqual(['503 5.5.1 nested MAIL command'])
  })

  test('DATA without an accepted recipient gets 554 5.5.1', async () => {
    const { send } = await setup({ onRcptTo: async () => ({ code: 550, enhanced: '5.1.1', message: 'no such user' }) })
    const lines = await send('EHLO c\r\nMAIL FROM:<a@b.c>\r\nRCPT TO:<nobody@mx.test>\r\nDATA\r\n')
    expect(finals(lines).slice(2)).toEqual(['550 5.1.1 no such user', '554 5.5.1 no valid recipients'])
  })

  test('unknown commands get 500 5.5.1, bad syntax 501', async () => {
    const { send } = await setup({}, { maxBadCommands: 100 })
    expect(finals(await send('FOO bar\r\n'))).toEqual(['500 5.5.1 command not recognized'])
    await send('EHLO c\r\n')
    expect(finals(await send('MAIL alice@example.org\r\n'))).toEqual(['501 5.5.2 syntax: MAIL FROM:<address>'])
    expect(finals(await send('MAIL FROM:<not an address>\r\n'))).toEqual(['501 5.1.7 bad sender address syntax'])
    await send('MAIL FROM:<a@b.c>\r\n')
    for (const bad of ['<>', '<@>', '<a@>', '<a..b@c.d>', '<a@b..c>', '<a@-b.c>', '<a b@c.d>']) {
      expect(finals(await send(`RCPT TO:${bad}\r\n`))).toEqual(['501 5.1.3 bad recipient address syntax'])
    }
    expect(codes(await send('RCPT TO:<x@mx.test> NOTIFY=NEVER\r\n'))).toEqual(['555'])
    expect(codes(await send('RCPT TO:<x@mx.test\r\n'))).toEqual(['501'])
  })

  test('invalid MAIL parameters', async () => {
    const { send } = await setup({}, { maxBadCommands: 100 })
    await send('EHLO c\r\n')
    expect(finals(await send('MAIL FROM:<a@b.c> SIZE=abc\r\n'))).toEqual(['501 5.5.4 invalid SIZE value'])
    expect(finals(await send('MAIL FROM:<a@b.c> BODY=BINARYMIME\r\n'))).toEqual(['501 5.5.4 BODY must be 7BIT or 8BITMIME'])
    expect(finals(await send('MAIL FROM:<a@b.c> AUTH=<>\r\n'))).toEqual(['555 5.5.4 unsupported parameter AUTH'])
    expect(codes(await send('MAIL FROM:<a@b.c> SIZE=1 SIZE=2\r\n'))).toEqual(['501'])
    expect(codes(await send('MAIL FROM:<a@b.c>SIZE=1\r\n'))).toEqual(['501'])
  })

  test('a space after the colon, source routes, quoted local parts and postmaster are accepted', async () => {
    const { send, calls } = await setup()
    const lines = await send(
      'EHLO c\r\nMAIL FROM: <@relay.example,@other.example:a@b.c>\r\n' + 'RCPT TO:<"john doe"@mx.test>\r\nRCPT TO:<Postmaster>\r\nRCPT TO:<x@[192.0.2.1]>\r\n',
    )
    expect(codes(lines)).toEqual(['250', '250', '250', '250', '250'])
    expect(calls).toEqual(['mail:a@b.c', 'rcpt:"john doe"@mx.test', 'rcpt:Postmaster', 'rcpt:x@[192.0.2.1]'])
  })

  test('non-ASCII addresses need SMTPUTF8', async () => {
    const { send } = await setup()
    await send('EHLO c\r\n')
    expect(finals(await send('MAIL FROM:<jürgen@b.c>\r\n'))).toEqual(['553 5.6.7 non-ASCII address requires SMTPUTF8'])
    await send('MAIL FROM:<a@b.c>\r\n')
    expect(codes(await send('RCPT TO:<δοκιμή@mx.test>\r\n'))).toEqual(['553'])
  })

  test('a 512-octet command line is fine, 513 gets 500 5.5.6 and the session goes on', async () => {
    const { send } = await setup()
    const ok = 'NOOP ' + 'x'.repeat(512 - 'NOOP '.length - 2) + '\r\n'
    expect(ok.length).toBe(512)
    expect(codes(await send(ok))).toEqual(['250'])
    const long = 'NOOP ' + 'x'.repeat(508) + '\r\n'
    expect(finals(await send(long + 'NOOP\r\n'))).toEqual(['500 5.5.6 line too long', '250 2.0.0 OK'])
  })

  test('an overlong line split across packets is discarded without buffering it', async () => {
    const { send, session } = await setup()
    expect(await send('NOOP ' + 'y'.repeat(600))).toEqual([])
    expect(await send('z'.repeat(100_000))).toEqual([])
    expect(codes(await send('zz\r\nNOOP\r\n'))).toEqual(['500', '250'])
    expect(session.closed).toBe(false)
  })

  test('after maxBadCommands errors the next one gets 421 4.7.0 and a close', async () => {
    const { send, io, session } = await setup()
    const lines = await send('FOO\r\nBAR\r\nBAZ\r\nQUX\r\nNOOP\r\n')
    expect(finals(lines)).toEqual([
      '500 5.5.1 command not recognized',
      '500 5.5.1 command not recognized',
      '500 5.5.1 command not recognized',
      '421 4.7.0 mx.test too many errors, closing connection',
    ])
    expect(io.closed).toBe(true)
    expect(session.outcome).toBe('too-many-errors')
  })

  test('invalid UTF-8 and control characters in commands are syntax errors', async () => {
    const { send } = await setup()
    expect(codes(await send(new Uint8Array([0x4e, 0xff, 0x0d, 0x0a])))).toEqual(['500'])
    expect(codes(await send('NOOP\x00\r\n'))).toEqual(['500'])
  })
})

describe('pipelining', () => {
  test('commands in one packet are answered in order, hooks awaited one by one', async () => {
    const order: string[] = []
    const { send, delivered } = await setup({
      onRcptTo: async (_s, _e, rcpt) => {
        order.push(`start ${rcpt}`)
        await Bun.sleep(rcpt.startsWith('slow') ? 20 : 0)
        order.push(`end ${rcpt}`)
        return rcpt.startsWith('bad') ? { code: 550, enhanced: '5.1.1', message: 'no such user' } : undefined
      },
    })
    const lines = await send(
      'EHLO c\r\nMAIL FROM:<a@b.c>\r\nRCPT TO:<slow@mx.test>\r\nRCPT TO:<bad@mx.test>\r\nRCPT TO:<fast@mx.test>\r\nDATA\r\nhi\r\n.\r\nQUIT\r\n',
    )
    expect(finals(lines).map(l => l.slice(0, 9))).toEqual([
      '250 START',
      '250 2.1.0',
      '250 2.1.5',
      '550 5.1.1',
      '250 2.1.5',
      '354 End d',
      '250 2.0.0',
      '221 2.0.0',
    ])
    expect(order).toEqual(['start slow@mx.test', 'end slow@mx.test', 'start bad@mx.test', 'end bad@mx.test', 'start fast@mx.test', 'end fast@mx.test'])
    expect(delivered[0]!.env.rcptTo).toEqual(['slow@mx.test', 'fast@mx.test'])
  })

  test('a session fed one byte at a time behaves the same', async () => {
    const { session, io, delivered } = await setup()
    const input = enc.encode(ENVELOPE + '..dot\r\nline\r\n.\r\nQUIT\r\n')
    for (const byte of input) await session.receive(new Uint8Array([byte]))
    expect(codes(io.take())).toEqual(['250', '250', '250', '354', '250', '221'])
    expect(body(delivered[0]!.message)).toBe('.dot\r\nline\r\n')
  })

  test('input queued behind a slow hook pauses the socket, and resumes it once drained', async () => {
    let release!: () => void
    const gate = new Promise<void>(r => (release = r))
    const { session, io } = await setup({ onMailFrom: () => gate })
    void session.receive(enc.encode('EHLO c\r\nMAIL FROM:<a@b.c>\r\n'))
    const flood = 'NOOP\r\n'.repeat(50_000)
    const done = session.receive(enc.encode(flood))
    expect(io.paused).toBe(true)
    release()
    await done
    expect(io.paused).toBe(false)
    expect(codes(io.take()).length).toBe(50_002)
  })
})

describe('DATA', () => {
  async function deliver(content: string) {
    const ctx = await setup()
    const lines = await ctx.send(ENVELOPE + content)
    return { ...ctx, lines, last: finals(lines).at(-1), message: ctx.delivered[0] ? body(ctx.delivered[0].message) : undefined }
  }

  test('dot-unstuffing removes exactly one leading dot', async () => {
    const { message } = await deliver('..\r\n...x\r\n.a\r\nmid.dle\r\n a.\r\n.\r\n')
    expect(message).toBe('.\r\n..x\r\na\r\nmid.dle\r\n a.\r\n')
  })

  test('an empty message is just the Received header', async () => {
    const { delivered, last } = await deliver('.\r\n')
    expect(last).toStartWith('250 2.0.0')
    expect(delivered[0]!.message).toEndWith('+0000\r\n')
  })

  test('the end marker is found across packet boundaries', async () => {
    const { send, delivered } = await setup()
    await send(ENVELOPE + 'abc\r')
    await send('\n')
    await send('.')
    expect(await send('\r')).toEqual([])
    expect(finals(await send('\nNOOP\r\n'))).toEqual(['250 2.0.0 OK queued as abc123-1', '250 2.0.0 OK'])
    expect(body(delivered[0]!.message)).toBe('abc\r\n')
  })

  test('lines longer than 1000 octets are accepted unchanged', async () => {
    const long = 'x'.repeat(5000)
    const { message, last } = await (async () => {
      const ctx = await setup({}, { maxMessageBytes: 100_000 })
      const lines = await ctx.send(ENVELOPE + long + '\r\n.\r\n')
      return { last: finals(lines).at(-1), message: body(ctx.delivered[0]!.message) }
    })()
    expect(last).toStartWith('250 2.0.0')
    expect(message).toBe(long + '\r\n')
  })

  test('8-bit and NUL bytes pass through untouched', async () => {
    let bytes: Uint8Array = new Uint8Array()
    const { send } = await setup({ onData: async (_s, _e, m) => void (bytes = m) })
    await send(ENVELOPE)
    const content = [0xc3, 0xa9, 0x00, 0xff, 0x80, 13, 10]
    expect(codes(await send(new Uint8Array([...content, 46, 13, 10])))).toEqual(['250'])
    expect([...bytes.subarray(bytes.length - content.length)]).toEqual(content)
  })

  test('oversize is rejected after the final dot with 552 5.3.4, the stream stays in sync', async () => {
    const { send, delivered } = await setup()
    await send(ENVELOPE)
    for (let i = 0; i < 20; i++) expect(await send('z'.repeat(98) + '\r\n')).toEqual([])
    const lines = await send('.\r\nMAIL FROM:<a@b.c>\r\n')
    expect(finals(lines)).toEqual(['552 5.3.4 message exceeds fixed maximum of 1000 bytes', '250 2.1.0 OK'])
    expect(delivered).toEqual([])
  })

  test('exactly maxMessageBytes is accepted', async () => {
    const { last } = await deliver('z'.repeat(998) + '\r\n.\r\n')
    expect(last).toStartWith('250 2.0.0')
  })

  test('SIZE= above the limit is refused at MAIL', async () => {
    const { send, calls } = await setup()
    expect(finals(await send('EHLO c\r\nMAIL FROM:<a@b.c> SIZE=1001\r\n')).at(-1)).toBe('552 5.3.4 message size exceeds fixed maximum of 1000 bytes')
    expect(calls).toEqual([])
  })

  test('250 is sent only after onData resolves', async () => {
    let release!: (r: SmtpReply | void) => void
    const { session, io } = await setup({ onData: () => new Promise(r => (release = r)) })
    const done = session.receive(enc.encode(ENVELOPE + 'x\r\n.\r\nNOOP\r\n'))
    await Bun.sleep(5)
    expect(codes(io.take())).toEqual(['250', '250', '250', '354'])
    expect(session.waitingOnHook).toBe(true)
    release()
    await done
    expect(codes(io.take())).toEqual(['250', '250'])
  })

  test('onData throwing gives 451 4.3.0; its rejections are passed through', async () => {
    const failing = await setup({
      onData: async () => {
        throw new Error('db down')
      },
    })
    expect(finals(await failing.send(ENVELOPE + 'x\r\n.\r\n')).at(-1)).toBe('451 4.3.0 temporary failure, try again later')
    expect(failing.session.messages).toBe(0)
    const full = await setup({ onData: async () => ({ code: 552, enhanced: '5.2.2', message: 'mailbox full' }) })
    expect(finals(await full.send(ENVELOPE + 'x\r\n.\r\n')).at(-1)).toBe('552 5.2.2 mailbox full')
  })

  test('a hook reply that is not 2xx/4xx/5xx becomes 451', async () => {
    const { send } = await setup({ onRcptTo: async () => ({ code: 354, message: 'go ahead' }) })
    const lines = await send('EHLO c\r\nMAIL FROM:<a@b.c>\r\nRCPT TO:<x@mx.test>\r\n')
    expect(lines.at(-1)).toBe('451 4.0.0 go ahead')
  })

  test('hook replies are sanitised: enhanced code of the right class, no injected lines', async () => {
    const { send } = await setup({
      onRcptTo: async () => ({ code: 550, enhanced: '2.0.0', message: 'no\r\n250 OK' }),
    })
    const lines = await send('EHLO c\r\nMAIL FROM:<a@b.c>\r\nRCPT TO:<x@mx.test>\r\n')
    expect(lines.slice(-2)).toEqual(['550-5.0.0 no', '550 5.0.0 250 OK'])
  })
})

describe('SMTP smuggling', () => {
  const fakeEnd = ['\n.\n', '\n.\r\n', '\r\n.\n', '\r.\r', '\r.\r\n', '\r\n.\r', '\r\n.\r\r\n', '\n.\r']
  for (const marker of fakeEnd) {
    test(`${JSON.stringify(marker)} does not end DATA; the hidden commands never run`, async () => {
      const { send, calls, delivered } = await setup()
      const payload =
        ENVELOPE +
        'Subject: legit\r\n\r\nhello' +
        marker +
        'MAIL FROM:<ceo@bank.example>\r\nRCPT TO:<victim@mx.test>\r\nDATA\r\nSubject: spoofed\r\n\r\nx\r\n.\r\n'
      const lines = await send(payload)
      expect(finals(lines).slice(4)).toEqual(['550 5.6.11 bare CR or LF in message; lines must end with CRLF'])
      expect(calls).toEqual(['mail:alice@example.org', 'rcpt:bob@mx.test'])
      expect(delivered).toEqual([])
    })
  }

  test('DataReader: only CRLF.CRLF ends, bare line breaks are flagged', () => {
    const feed = (s: string) => {
      const r = new DataReader(1000)
      const used = r.feed(enc.encode(s))
      return { used, bare: r.bareLineBreak, out: dec.decode(Buffer.concat(r.chunks())) }
    }
    expect(feed('a\r\n.\r\nrest')).toEqual({ used: 6, bare: false, out: 'a\r\n' })
    expect(feed('.\r\n')).toEqual({ used: 3, bare: false, out: '' })
    expect(feed('a\n.\nb')).toEqual({ used: -1, bare: true, out: 'a\n.\nb' })
    expect(feed('a\r.\rb')).toEqual({ used: -1, bare: true, out: 'a\r.\rb' })
    expect(feed('a\r\n.\nb')).toEqual({ used: -1, bare: true, out: 'a\r\n\nb' })
    expect(feed('a\r\r\n')).toEqual({ used: -1, bare: true, out: 'a\r\r\n' })
  })
})

describe('STARTTLS', () => {
  test('pipelined plaintext after STARTTLS is discarded and a new EHLO is required', async () => {
    const { send, io, session, calls } = await setup()
    await send('EHLO c\r\nMAIL FROM:<a@b.c>\r\n')
    const lines = await send('STARTTLS\r\nMAIL FROM:<injected@evil.example>\r\n')
    expect(lines).toEqual(['220 2.0.0 ready to start TLS'])
    expect(io.tlsRequested).toBe(true)
    expect(await send('RSET\r\n')).toEqual([])
    session.tlsStarted()
    expect(session.tls).toBe(true)
    expect(finals(await send('MAIL FROM:<a@b.c>\r\n'))).toEqual(['503 5.5.1 send HELO/EHLO first'])
    expect(await send('EHLO c\r\n')).not.toContain('250-STARTTLS')
    expect(finals(await send('STARTTLS\r\n'))).toEqual(['503 5.5.1 TLS already active'])
    expect(calls).toEqual(['mail:a@b.c'])
  })

  test('messages over TLS are stamped ESMTPS', async () => {
    const { send, session, delivered } = await setup()
    await send('EHLO c\r\nSTARTTLS\r\n')
    session.tlsStarted()
    await send(ENVELOPE + 'x\r\n.\r\n')
    expect(delivered[0]!.message).toContain('with ESMTPS id')
    expect(delivered[0]!.info.tls).toBe(true)
  })

  test('not offered without a certificate', async () => {
    const { send } = await setup({}, { tlsAvailable: false })
    expect(finals(await send('STARTTLS\r\n'))).toEqual(['502 5.5.1 STARTTLS not available'])
  })
})

describe('connection hooks, limits and shutdown', () => {
  test('maxRecipients: 452 4.5.3 beyond it', async () => {
    const { send } = await setup()
    const lines = await send('EHLO c\r\nMAIL FROM:<a@b.c>\r\n' + [1, 2, 3, 4].map(i => `RCPT TO:<u${i}@mx.test>\r\n`).join(''))
    expect(finals(lines).slice(2)).toEqual(['250 2.1.5 OK', '250 2.1.5 OK', '250 2.1.5 OK', '452 4.5.3 too many recipients'])
  })

  test('onConnect 421 refuses and closes', async () => {
    const { greeting, io, session } = await setup({ onConnect: async () => ({ code: 421, enhanced: '4.7.0', message: 'busy' }) })
    expect(greeting).toEqual(['421 4.7.0 busy'])
    expect(io.closed).toBe(true)
    expect(session.outcome).toBe('refused')
  })

  test('onConnect 554 keeps the connection, answering 503 until QUIT', async () => {
    const { greeting, send, io } = await setup({ onConnect: async () => ({ code: 554, enhanced: '5.7.1', message: 'go away' }) })
    expect(greeting).toEqual(['554 5.7.1 go away'])
    expect(codes(await send('EHLO c\r\nQUIT\r\n'))).toEqual(['503', '221'])
    expect(io.closed).toBe(true)
  })

  test('onConnect throwing is a temporary refusal', async () => {
    const { greeting, io } = await setup({
      onConnect: async () => {
        throw new Error('boom')
      },
    })
    expect(greeting).toEqual(['421 4.3.0 mx.test temporary failure, try again later'])
    expect(io.closed).toBe(true)
  })

  test('onMailFrom may refuse with 452', async () => {
    const { send } = await setup({ onMailFrom: async () => ({ code: 452, enhanced: '4.3.1', message: 'storage full' }) })
    expect(finals(await send('EHLO c\r\nMAIL FROM:<a@b.c>\r\nRCPT TO:<x@mx.test>\r\n')).slice(1)).toEqual([
      '452 4.3.1 storage full',
      '503 5.5.1 need MAIL before RCPT',
    ])
  })

  test('idle timeout: 421 4.4.2', async () => {
    const { session, io } = await setup()
    session.idleTimeout()
    expect(io.take()).toEqual(['421 4.4.2 mx.test idle timeout, closing connection'])
    expect(io.closed).toBe(true)
    expect(session.outcome).toBe('idle-timeout')
  })

  test('shutdown: an idle session gets 421 4.3.2 at once', async () => {
    const { session, io } = await setup()
    session.shutdown()
    expect(io.take()).toEqual(['421 4.3.2 mx.test shutting down'])
    expect(session.outcome).toBe('shutdown')
  })

  test('shutdown: a message being received is finished first', async () => {
    const { session, io, send, delivered } = await setup()
    await send(ENVELOPE + 'part one\r\n')
    session.shutdown()
    expect(io.take()).toEqual([])
    expect(finals(await send('part two\r\n.\r\nMAIL FROM:<a@b.c>\r\n'))).toEqual(['250 2.0.0 OK queued as abc123-1', '421 4.3.2 mx.test shutting down'])
    expect(body(delivered[0]!.message)).toBe('part one\r\npart two\r\n')
    expect(io.closed).toBe(true)
  })

  test('a client gone during onData: the late reply is dropped', async () => {
    let release!: () => void
    const { session, io } = await setup({ onData: () => new Promise<void>(r => (release = r)) })
    const done = session.receive(enc.encode(ENVELOPE + 'x\r\n.\r\n'))
    await Bun.sleep(1)
    io.take()
    session.detach()
    release()
    await done
    expect(io.take()).toEqual([])
    expect(session.outcome).toBe('peer-closed')
  })
})

describe('parseMailbox', () => {
  test('accepts RFC 5321 mailboxes, rejects the rest', () => {
    expect(parseMailbox('<a.b+tag@sub.example.org>', 'recipient')).toBe('a.b+tag@sub.example.org')
    expect(parseMailbox('<x@[IPv6:2001:db8::1]>', 'recipient')).toBe('x@[IPv6:2001:db8::1]')
    expect(parseMailbox('<>', 'sender')).toBe('')
    expect(parseMailbox('<>', 'recipient')).toBeNull()
    expect(parseMailbox(`<${'a'.repeat(65)}@b.c>`, 'recipient')).toBeNull()
    expect(parseMailbox(`<a@${'b'.repeat(64)}.c>`, 'recipient')).toBeNull()
    expect(parseMailbox('<x@[300.1.1.1]>', 'recipient')).toBeNull()
    expect(parseMailbox('<.a@b.c>', 'recipient')).toBeNull()
    expect(parseMailbox('<a@b.c.>', 'recipient')).toBeNull()
  })
})
