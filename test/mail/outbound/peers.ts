/**
 * Real peers for the outbound relay tests: nodemailer's smtp-server on loopback (with STARTTLS,
 * AUTH, refusals and a DATA that never answers), a scripted TCP server for replies no real
 * server would send, and a closed port.
 */
import { createServer, type Server, type Socket } from 'node:net'
import { SMTPServer, type SMTPServerOptions } from 'smtp-server'

const fixtures = `${import.meta.dir}/../../fixtures/tls`
export const tlsCert = await Bun.file(`${fixtures}/cert.pem`).text()
export const tlsKey = await Bun.file(`${fixtures}/key.pem`).text()

export interface Received {
  mailFrom: string
  rcptTo: string[]
  raw: string
  secure: boolean
  user: string | undefined
}

export interface RelayPeer {
  url: string
  port: number
  received: Received[]
  /** connections the server accepted */
  connections: number
  /** messages whose data ended and got no answer (`data: 'hang'`): a client is waiting on each */
  held: number
  stop(): Promise<void>
}

type ReplyError = Error & { responseCode?: number }
const reply = (code: number, message: string): ReplyError => Object.assign(new Error(message), { responseCode: code })

export interface PeerOptions {
  /** STARTTLS offered with the test certificate */
  starttls?: boolean
  /** TLS from the first byte (smtps) */
  implicitTls?: boolean
  /** AUTH required with this user and password */
  credentials?: { user: string; pass: string }
  /** the RCPT reply for an address, or undefined to accept */
  rcpt?: (address: string) => { code: number; message: string } | undefined
  /** the reply to the end of data, or 'hang' to never answer */
  data?: 'hang' | { code: number; message: string }
}

export async function startRelayPeer(opts: PeerOptions = {}): Promise<RelayPeer> {
  const received: Received[] = []
  const tls = opts.starttls || opts.implicitTls
  const peer = { received, connections: 0, held: 0 } as RelayPeer
  const options: SMTPServerOptions = {
    secure: opts.implicitTls ?? false,
    ...(tls ? { key: tlsKey, cert: tlsCert } : { disabledCommands: ['STARTTLS'] }),
    authOptional: !opts.credentials,
    allowInsecureAuth: false,
    disableReverseLookup: true,
    logger: false,
    closeTimeout: 100,
    onConnect(_session, callback) {
      peer.connections++
      callback()
    },
    onAuth(auth, _session, callback) {
      const ok = opts.credentials && auth.username === opts.credentials.user && auth.password === opts.credentials.pass
      if (!ok) return callback(reply(535, '5.7.8 Authentication credentials invalid'))
      callback(null, { user: auth.username })
    },
    onRcptTo(address, _session, callback) {
      const refusal = opts.rcpt?.(address.address)
      callback(refusal ? reply(refusal.code, refusal.message) : undefined)
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        if (opts.data === 'hang') return void peer.held++
        if (opts.data) return callback(reply(opts.data.code, opts.data.message))
        received.push({
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          rcptTo: session.envelope.rcptTo.map(r => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
          secure: session.secure,
          user: session.user as string | undefined,
        })
        callback(null)
      })
    },
  }
  const server = new SMTPServer(options)
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', () => resolve()))
  const port = (server.server.address() as { port: number }).port
  const auth = opts.credentials ? `${encodeURIComponent(opts.credentials.user)}:${encodeURIComponent(opts.credentials.pass)}@` : ''
  return Object.assign(peer, {
    port,
    url: `${opts.implicitTls ? 'smtps' : 'smtp'}://${auth}127.0.0.1:${port}`,
    stop: () => new Promise<void>(resolve => server.close(() => resolve())),
  })
}

export interface ScriptState {
  inData: boolean
  /** 1 for the first connection the server accepted, 2 for the next... */
  connection: number
  /** messages completed on this connection */
  messages: number
}

/** What `answer` returns to drop the connection without a word. */
export const HANG_UP = Symbol('hang up')

/**
 * A TCP server that follows a script: `greeting` is sent on connect (null = say nothing), then
 * each line the client sends is answered by `answer` (null = stay silent).
 */
export async function startScriptedPeer(script: {
  greeting: string | null
  answer: (line: string, state: ScriptState) => string | null | typeof HANG_UP
}): Promise<{ url: string; stop(): Promise<void> }> {
  const sockets = new Set<Socket>()
  let connections = 0
  const server: Server = createServer(socket => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
    const state: ScriptState = { inData: false, connection: ++connections, messages: 0 }
    const send = (answer: string | null | typeof HANG_UP) => {
      if (answer === HANG_UP) socket.destroy()
      else if (answer !== null) socket.write(answer)
    }
    let buffer = ''
    if (script.greeting !== null) socket.write(script.greeting)
    socket.on('data', chunk => {
      buffer += chunk.toString('latin1')
      let at: number
      while ((at = buffer.indexOf('\r\n')) >= 0) {
        const line = buffer.slice(0, at)
        buffer = buffer.slice(at + 2)
        if (state.inData) {
          if (line !== '.') continue
          state.inData = false
          state.messages++
          send(script.answer('.', state))
          continue
        }
        const answer = script.answer(line, state)
        if (/^DATA$/i.test(line) && typeof answer === 'string' && answer.startsWith('354')) state.inData = true
        send(answer)
      }
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', () => resolve()))
  const port = (server.address() as { port: number }).port
  return {
    url: `smtp://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>(resolve => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}

/** A well-behaved SMTP dialogue up to the end of data; `end` answers the final dot. */
export function smtpDialogue(end: string | null) {
  return (line: string): string | null => {
    const verb = line.split(/[ :]/)[0]!.toUpperCase()
    if (verb === 'EHLO' || verb === 'HELO') return '250 scripted.test\r\n'
    if (verb === 'MAIL' || verb === 'RCPT' || verb === 'RSET' || verb === 'NOOP') return '250 2.0.0 ok\r\n'
    if (verb === 'DATA') return '354 go ahead\r\n'
    if (verb === 'QUIT') return '221 bye\r\n'
    if (line === '.') return end
    return '502 5.5.2 unknown command\r\n'
  }
}

/** A loopback port nothing listens on. */
export async function closedPort(): Promise<string> {
  const server = createServer()
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', () => resolve()))
  const port = (server.address() as { port: number }).port
  await new Promise<void>(resolve => server.close(() => resolve()))
  return `smtp://127.0.0.1:${port}`
}
