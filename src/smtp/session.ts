/**
 * The per-connection RFC 5321 state machine. It owns no socket: bytes come in through
 * `receive`, replies and the close/STARTTLS requests go out through a `SessionIO`, and every
 * decision is delegated to `SmtpHooks`. This keeps the protocol testable without a network.
 *
 * Input is processed by a single serial pump, so pipelined commands (RFC 2920) are answered in
 * order and their hooks are awaited one after another even when they all arrived in one packet.
 *
 * The replies the pump produces are collected and handed to `SessionIO.write` in one piece when
 * it runs out of input, so a pipelined group is answered with one socket write. A reply is never
 * held back behind a wait: the batch is flushed before the pump waits on a hook that has not
 * already finished, before the transport closes or starts TLS, and outside the pump every reply
 * is written at once.
 */
import { log } from '../log'
import { isAscii, parseMailbox, parseParameters, parsePathArgument } from './address'
import { LF, concat, stripLineEnd } from './bytes'
import { DataReader } from './data-reader'
import { protocolName, receivedHeader } from './received'
import { formatReply, normalizeReply } from './reply'
import type { SmtpEnvelope, SmtpHooks, SmtpReply, SmtpServerOptions, SmtpSessionInfo } from './types'

/** RFC 5321 4.5.3.1.4: a command line is at most 512 octets including the CRLF. */
const MAX_COMMAND_LINE = 512
/** Pipelined input queued behind a slow hook beyond this pauses the socket (backpressure). */
const MAX_QUEUED_BYTES = 256 * 1024
/** Batched replies beyond this are written without waiting for the end of the input (a long pipelined run). */
const MAX_BATCHED_REPLY_CHARS = 16 * 1024

const utf8 = new TextDecoder('utf-8', { fatal: true })
const encoder = new TextEncoder()

export interface SessionIO {
  write(text: string): void
  /** Flush what was written, then close. */
  close(): void
  /** Called right after `220 Ready to start TLS` was written; the transport must call `tlsStarted()` once the handshake is done. */
  startTls(): void
  pause?(): void
  resume?(): void
}

export type SessionOptions = Pick<SmtpServerOptions, 'hostname' | 'maxMessageBytes' | 'maxRecipients' | 'maxBadCommands'> & {
  /** STARTTLS can be offered (the transport has a certificate). */
  tlsAvailable: boolean
  now?: () => Date
}

export type SessionOutcome = 'open' | 'quit' | 'peer-closed' | 'idle-timeout' | 'too-many-errors' | 'refused' | 'shutdown' | 'tls-failed' | 'aborted' | 'error'

type Phase = 'connecting' | 'ready' | 'rejected' | 'starttls' | 'closed'

const TOO_LONG = Symbol('line too long')

export function newSessionId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8))
  return Array.from(bytes, b => b.toString(16).padStart(2, '0')).join('')
}

export class SmtpSession {
  outcome: SessionOutcome = 'open'
  /** Messages accepted with a 2xx after DATA. */
  messages = 0

  private readonly info: SmtpSessionInfo
  private phase: Phase = 'connecting'
  private esmtp = false
  private tx: SmtpEnvelope | null = null
  private reader: DataReader | null = null
  private queue: Uint8Array[] = []
  private queued = 0
  private paused = false
  private discardingLongLine = false
  private badCommands = 0
  private hookInFlight = false
  private stopping = false
  private pumpActive = false
  private pumpDone: Promise<void> = Promise.resolve()
  /** Replies are being collected in `batch` (the pump is running, not waiting on a hook). */
  private batching = false
  private batch = ''
  private transactions = 0

  constructor(
    private readonly opts: SessionOptions,
    private readonly hooks: SmtpHooks,
    private readonly io: SessionIO,
    conn: { id?: string; remoteAddress: string; tls?: boolean },
  ) {
    this.info = { id: conn.id ?? newSessionId(), remoteAddress: conn.remoteAddress, tls: conn.tls ?? false }
  }

  get id(): string {
    return this.info.id
  }
  get remoteAddress(): string {
    return this.info.remoteAddress
  }
  get tls(): boolean {
    return this.info.tls
  }
  get closed(): boolean {
    return this.phase === 'closed'
  }
  /** A hook is running: the client is waiting on us, so idle timeouts must not fire. */
  get waitingOnHook(): boolean {
    return this.hookInFlight
  }
  /** Work a graceful shutdown should let finish: a hook, or a message being received. */
  get busy(): boolean {
    return this.hookInFlight || this.reader !== null
  }

  /** Runs onConnect and sends the greeting (or the refusal). Resolves once queued input is processed. */
  async start(): Promise<void> {
    let reply: SmtpReply | undefined
    try {
      const answer = await this.callHook(() => this.hooks.onConnect?.(this.snapshot()))
      reply = answer ? normalizeReply(answer) : undefined
    } catch (err) {
      log.error('smtp onConnect hook failed', { session: this.info.id, err })
      reply = { code: 421, enhanced: '4.3.0', message: `${this.opts.hostname} temporary failure, try again later` }
    }
    if (this.phase === 'closed') return
    if (this.stopping) return this.closeWith(421, '4.3.2', `${this.opts.hostname} shutting down`, 'shutdown')
    if (reply && reply.code >= 400) {
      this.send(reply)
      // RFC 5321 3.1: a 554 greeting keeps the connection until QUIT, answering 503 meanwhile.
      if (reply.code === 554) this.phase = 'rejected'
      else return this.close('refused')
    } else {
      // RFC 2034: the greeting carries no enhanced status code.
      this.write(formatReply(220, undefined, reply?.message ?? `${this.opts.hostname} ESMTP ready`))
      this.phase = 'ready'
    }
    return this.kick()
  }

  /** Feeds bytes from the client. The promise resolves when everything processable has been processed. */
  receive(chunk: Uint8Array): Promise<void> {
    // During the TLS handshake the transport must not feed us anything; plaintext is never trusted then.
    if (this.phase === 'closed' || this.phase === 'starttls' || chunk.length === 0) return this.pumpDone
    this.queue.push(chunk)
    this.queued += chunk.length
    if (this.queued > MAX_QUEUED_BYTES && !this.paused) {
      this.paused = true
      this.io.pause?.()
    }
    return this.kick()
  }

  /** The transport finished the TLS handshake after STARTTLS. RFC 3207 4.2: forget everything, expect a new EHLO. */
  tlsStarted(): void {
    if (this.phase !== 'starttls') return
    this.info.tls = true
    this.info.helo = undefined
    this.esmtp = false
    this.tx = null
    this.phase = 'ready'
  }

  idleTimeout(): void {
    if (this.phase === 'closed') return
    this.closeWith(421, '4.4.2', `${this.opts.hostname} idle timeout, closing connection`, 'idle-timeout')
  }

  /** Graceful shutdown: idle sessions are told 421 now, busy ones after their current message. */
  shutdown(): void {
    if (this.phase === 'closed') return
    this.stopping = true
    if (!this.busy) this.closeWith(421, '4.3.2', `${this.opts.hostname} shutting down`, 'shutdown')
  }

  /** The transport is gone (peer closed, or forced shut). Late hook results are dropped. */
  detach(outcome: SessionOutcome = 'peer-closed'): void {
    if (this.phase === 'closed') return
    if (this.outcome === 'open') this.outcome = this.phase === 'starttls' ? 'tls-failed' : outcome
    this.phase = 'closed'
    this.batch = ''
    this.dropInput()
  }

  private kick(): Promise<void> {
    if (!this.pumpActive && (this.phase === 'ready' || this.phase === 'rejected')) {
      this.pumpActive = true
      this.pumpDone = this.pump()
    }
    return this.pumpDone
  }

  private async pump(): Promise<void> {
    this.batching = true
    try {
      while (this.phase === 'ready' || this.phase === 'rejected') {
        if (this.stopping && !this.reader) {
          this.closeWith(421, '4.3.2', `${this.opts.hostname} shutting down`, 'shutdown')
          break
        }
        if (this.reader) {
          const chunk = this.shift()
          if (!chunk) break
          const used = this.reader.feed(chunk)
          if (used < 0) continue
          if (used < chunk.length) this.unshift(chunk.subarray(used))
          await this.endOfData(this.reader)
          continue
        }
        const line = this.takeLine()
        if (line === null) break
        await this.command(line)
      }
    } catch (err) {
      log.error('smtp session failed', { session: this.info.id, err })
      this.closeWith(421, '4.3.0', `${this.opts.hostname} internal error, closing connection`, 'error')
    } finally {
      this.flush()
      this.batching = false
      this.pumpActive = false
      if (this.paused && this.queued < MAX_QUEUED_BYTES / 2 && this.phase !== 'closed') {
        this.paused = false
        this.io.resume?.()
      }
    }
  }

  // ---- input buffering -------------------------------------------------------------------

  private shift(): Uint8Array | undefined {
    const chunk = this.queue.shift()
    if (chunk) this.queued -= chunk.length
    return chunk
  }

  private unshift(chunk: Uint8Array): void {
    this.queue.unshift(chunk)
    this.queued += chunk.length
  }

  private dropInput(): void {
    this.queue = []
    this.queued = 0
    this.discardingLongLine = false
  }

  /**
   * Next command line, LF-terminated (a preceding CR is stripped later). Bare LF is tolerated
   * here because command lines cannot smuggle anything; DATA is where CRLF is enforced.
   * An overlong line is discarded up to its LF without buffering it.
   */
  private takeLine(): Uint8Array | typeof TOO_LONG | null {
    for (;;) {
      const head = this.queue[0]
      if (!head) return null
      const lf = head.indexOf(LF)
      if (lf < 0) {
        if (this.discardingLongLine || head.length >= MAX_COMMAND_LINE) {
          this.discardingLongLine = true
          this.shift()
          continue
        }
        const next = this.queue[1]
        if (!next) return null
        this.queue.splice(0, 2, concat([head, next]))
        continue
      }
      const remaining = head.subarray(lf + 1)
      if (remaining.length > 0) this.queue[0] = remaining
      else this.queue.shift()
      this.queued -= lf + 1
      if (this.discardingLongLine) {
        this.discardingLongLine = false
        return TOO_LONG
      }
      return lf + 1 > MAX_COMMAND_LINE ? TOO_LONG : head.subarray(0, lf + 1)
    }
  }

  // ---- commands --------------------------------------------------------------------------

  private async command(raw: Uint8Array | typeof TOO_LONG): Promise<void> {
    if (raw === TOO_LONG) return this.bad(500, '5.5.6', 'line too long')
    let text: string
    try {
      text = utf8.decode(stripLineEnd(raw))
    } catch {
      return this.bad(500, '5.5.2', 'invalid UTF-8 in command')
    }
    if (/[\x00-\x1f\x7f]/.test(text)) return this.bad(500, '5.5.2', 'control characters in command')
    const sp = text.indexOf(' ')
    const verb = (sp < 0 ? text : text.slice(0, sp)).toUpperCase()
    const arg = sp < 0 ? '' : text.slice(sp + 1).replace(/^ +| +$/g, '')

    if (this.phase === 'rejected') {
      if (verb === 'QUIT') return this.quit()
      return this.bad(503, '5.5.1', 'connection refused, send QUIT')
    }
    switch (verb) {
      case 'EHLO':
      case 'HELO':
        return this.hello(verb, arg)
      case 'MAIL':
        return this.mail(arg)
      case 'RCPT':
        return this.rcpt(arg)
      case 'DATA':
        return this.data(arg)
      case 'RSET':
        if (arg) return this.bad(501, '5.5.4', 'RSET takes no parameters')
        this.tx = null
        return this.reply(250, '2.0.0', 'OK')
      case 'NOOP':
        return this.reply(250, '2.0.0', 'OK')
      case 'VRFY':
        if (!arg) return this.bad(501, '5.5.4', 'syntax: VRFY <address>')
        // RFC 5321 3.5.3: 252 neither confirms nor denies, so VRFY cannot be used to harvest addresses.
        return this.reply(252, '2.5.0', 'cannot VRFY user, but will accept message and attempt delivery')
      case 'EXPN':
        return this.reply(502, '5.5.1', 'EXPN not supported')
      case 'HELP':
        return this.reply(214, '2.0.0', 'commands: EHLO HELO MAIL RCPT DATA RSET NOOP VRFY QUIT STARTTLS')
      case 'QUIT':
        return this.quit()
      case 'STARTTLS':
        return this.starttls(arg)
      default:
        return this.bad(500, '5.5.1', 'command not recognized')
    }
  }

  private hello(verb: 'EHLO' | 'HELO', arg: string): void {
    if (!arg || arg.includes(' ')) return this.bad(501, '5.5.4', `syntax: ${verb} hostname`)
    // RFC 5321 4.1.4: EHLO/HELO in the middle of a transaction resets it.
    this.tx = null
    this.info.helo = arg
    this.esmtp = verb === 'EHLO'
    // RFC 2034: EHLO/HELO replies carry no enhanced status code.
    if (verb === 'HELO') return this.write(formatReply(250, undefined, this.opts.hostname))
    const lines = [`${this.opts.hostname} greets ${arg}`, 'PIPELINING', `SIZE ${this.opts.maxMessageBytes}`, '8BITMIME', 'SMTPUTF8', 'ENHANCEDSTATUSCODES']
    if (this.opts.tlsAvailable && !this.info.tls) lines.push('STARTTLS')
    this.write(formatReply(250, undefined, lines.join('\n')))
  }

  private async mail(arg: string): Promise<void> {
    if (!this.info.helo) return this.bad(503, '5.5.1', 'send HELO/EHLO first')
    if (this.tx) return this.bad(503, '5.5.1', 'nested MAIL command')
    const parsed = parsePathArgument(arg, 'FROM')
    if (!parsed) return this.bad(501, '5.5.2', 'syntax: MAIL FROM:<address>')
    const mailFrom = parseMailbox(parsed.path, 'sender')
    if (mailFrom === null) return this.bad(501, '5.1.7', 'bad sender address syntax')
    const params = parseParameters(parsed.rest)
    if (!params) return this.bad(501, '5.5.4', 'invalid or duplicate parameters')
    if (params.size > 0 && !this.esmtp) return this.bad(555, '5.5.4', 'parameters require EHLO')

    const env: SmtpEnvelope = { mailFrom, rcptTo: [], smtputf8: false, notes: new Map() }
    for (const [key, value] of params) {
      if (key === 'SIZE') {
        if (value === undefined || !/^\d{1,20}$/.test(value)) return this.bad(501, '5.5.4', 'invalid SIZE value')
        env.size = Number(value)
      } else if (key === 'BODY') {
        const body = value?.toUpperCase()
        if (body !== '7BIT' && body !== '8BITMIME') return this.bad(501, '5.5.4', 'BODY must be 7BIT or 8BITMIME')
        env.body = body
      } else if (key === 'SMTPUTF8') {
        if (value !== undefined) return this.bad(501, '5.5.4', 'SMTPUTF8 takes no value')
        env.smtputf8 = true
      } else {
        return this.bad(555, '5.5.4', `unsupported parameter ${key}`)
      }
    }
    // RFC 6531 3.4: UTF-8 addresses are only allowed in an SMTPUTF8 transaction.
    if (!env.smtputf8 && !isAscii(mailFrom)) return this.reply(553, '5.6.7', 'non-ASCII address requires SMTPUTF8')
    // RFC 1870: refuse early, before the client sends the whole message.
    if (env.size !== undefined && env.size > this.opts.maxMessageBytes) {
      return this.reply(552, '5.3.4', `message size exceeds fixed maximum of ${this.opts.maxMessageBytes} bytes`)
    }
    const hook = this.hooks.onMailFrom
    const reply = hook ? await this.ask('onMailFrom', () => hook.call(this.hooks, this.snapshot(), copyEnvelope(env))) : undefined
    if (reply && reply.code >= 400) return this.send(reply)
    this.tx = env
    this.send(reply ?? { code: 250, enhanced: '2.1.0', message: 'OK' })
  }

  private async rcpt(arg: string): Promise<void> {
    const tx = this.tx
    if (!tx) return this.bad(503, '5.5.1', 'need MAIL before RCPT')
    const parsed = parsePathArgument(arg, 'TO')
    if (!parsed) return this.bad(501, '5.5.2', 'syntax: RCPT TO:<address>')
    const rcpt = parseMailbox(parsed.path, 'recipient')
    if (!rcpt) return this.bad(501, '5.1.3', 'bad recipient address syntax')
    const params = parseParameters(parsed.rest)
    if (!params) return this.bad(501, '5.5.4', 'invalid or duplicate parameters')
    const [first] = params.keys()
    if (first !== undefined) return this.bad(555, '5.5.4', `unsupported parameter ${first}`)
    if (!tx.smtputf8 && !isAscii(rcpt)) return this.reply(553, '5.6.7', 'non-ASCII address requires SMTPUTF8')
    // RFC 5321 4.5.3.1.10: 452 makes the client send the rest in another transaction.
    if (tx.rcptTo.length >= this.opts.maxRecipients) return this.reply(452, '4.5.3', 'too many recipients')
    if (tx.rcptTo.includes(rcpt)) return this.reply(250, '2.1.5', 'OK')
    const reply = await this.ask('onRcptTo', () => this.hooks.onRcptTo(this.snapshot(), copyEnvelope(tx), rcpt))
    if (reply && reply.code >= 400) return this.send(reply)
    tx.rcptTo.push(rcpt)
    this.send(reply ?? { code: 250, enhanced: '2.1.5', message: 'OK' })
  }

  private data(arg: string): void {
    if (arg) return this.bad(501, '5.5.4', 'DATA takes no parameters')
    if (!this.tx) return this.bad(503, '5.5.1', 'need MAIL before DATA')
    // RFC 2920 3.1 / RFC 5321 3.3: every RCPT failed (typical when pipelining); not a client error.
    if (this.tx.rcptTo.length === 0) return this.reply(554, '5.5.1', 'no valid recipients')
    this.reader = new DataReader(this.opts.maxMessageBytes)
    this.write(formatReply(354, undefined, 'End data with <CR><LF>.<CR><LF>'))
  }

  private async endOfData(reader: DataReader): Promise<void> {
    const tx = this.tx
    this.reader = null
    this.tx = null
    if (!tx) return
    if (reader.oversize) {
      return this.reply(552, '5.3.4', `message exceeds fixed maximum of ${this.opts.maxMessageBytes} bytes`)
    }
    // SMTP smuggling defence: we never treat bare CR/LF as a line ending, and refuse to pass such
    // a message on, since another MTA downstream might.
    if (reader.bareLineBreak) return this.reply(550, '5.6.11', 'bare CR or LF in message; lines must end with CRLF')
    // An RFC 5321 Atom (no dots), unique per message.
    const queueId = `${this.info.id}-${++this.transactions}`
    const header = receivedHeader({
      helo: this.info.helo ?? 'unknown',
      remoteAddress: this.info.remoteAddress,
      hostname: this.opts.hostname,
      protocol: protocolName(this.esmtp, this.info.tls, tx.smtputf8),
      id: queueId,
      rcpt: tx.rcptTo.length === 1 ? tx.rcptTo[0] : undefined,
      date: this.opts.now?.() ?? new Date(),
    })
    const message = concat([encoder.encode(header), ...reader.chunks()])
    const reply = await this.ask('onData', () => this.hooks.onData(this.snapshot(), copyEnvelope(tx), message))
    if (reply && reply.code >= 400) return this.send(reply)
    this.messages++
    this.send(reply ?? { code: 250, enhanced: '2.0.0', message: `OK queued as ${queueId}` })
  }

  private starttls(arg: string): void {
    if (!this.opts.tlsAvailable) return this.bad(502, '5.5.1', 'STARTTLS not available')
    if (this.info.tls) return this.bad(503, '5.5.1', 'TLS already active')
    if (arg) return this.bad(501, '5.5.4', 'STARTTLS takes no parameters')
    this.reply(220, '2.0.0', 'ready to start TLS')
    // CVE-2011-0411: anything pipelined after STARTTLS was sent in plaintext (possibly injected by
    // a man in the middle) and must not be executed inside the TLS session.
    this.dropInput()
    if (this.paused) {
      // The handshake has to be able to read from the socket.
      this.paused = false
      this.io.resume?.()
    }
    this.tx = null
    this.phase = 'starttls'
    // The 220 (and whatever preceded it) must reach the transport before it starts the handshake.
    this.flush()
    this.io.startTls()
  }

  private quit(): void {
    this.reply(221, '2.0.0', `${this.opts.hostname} closing connection`)
    this.close('quit')
  }

  // ---- replies ---------------------------------------------------------------------------

  /** A protocol error by the client; too many of them end the session. */
  private bad(code: number, enhanced: string, message: string): void {
    this.badCommands++
    if (this.badCommands > this.opts.maxBadCommands) {
      return this.closeWith(421, '4.7.0', `${this.opts.hostname} too many errors, closing connection`, 'too-many-errors')
    }
    this.reply(code, enhanced, message)
  }

  private reply(code: number, enhanced: string | undefined, message: string): void {
    this.write(formatReply(code, enhanced, message))
  }

  private send(r: SmtpReply): void {
    this.reply(r.code, r.enhanced, r.message)
  }

  private write(text: string): void {
    if (this.phase === 'closed') return
    if (!this.batching) return this.io.write(text)
    this.batch += text
    if (this.batch.length >= MAX_BATCHED_REPLY_CHARS) this.flush()
  }

  /** Writes the batched replies, if any, in one `SessionIO.write`. */
  private flush(): void {
    if (this.batch === '') return
    const text = this.batch
    this.batch = ''
    this.io.write(text)
  }

  private closeWith(code: number, enhanced: string, message: string, outcome: SessionOutcome): void {
    // Mid-handshake the transport belongs to TLS; a plaintext reply would corrupt it.
    if (this.phase !== 'starttls') this.reply(code, enhanced, message)
    this.close(outcome)
  }

  private close(outcome: SessionOutcome): void {
    if (this.phase === 'closed') return
    this.flush()
    if (this.outcome === 'open') this.outcome = outcome
    this.phase = 'closed'
    this.reader = null
    this.dropInput()
    this.io.close()
  }

  // ---- hooks -----------------------------------------------------------------------------

  private snapshot(): SmtpSessionInfo {
    return { ...this.info }
  }

  private async callHook<T>(fn: () => Promise<T> | undefined): Promise<T | undefined> {
    this.hookInFlight = true
    try {
      const result = fn()
      // A hook that has already answered (a no-op, a cache hit) costs a microtask, not a wait:
      // its reply can join the batch.
      if (!isPending(result)) return await result
      // The client must not wait for the replies we already have while this hook runs.
      this.flush()
      const batching = this.batching
      this.batching = false
      try {
        return await result
      } finally {
        this.batching = batching
      }
    } finally {
      this.hookInFlight = false
    }
  }

  /** Runs a decision hook. A failure is a temporary error: the client retries later, nothing bounces. */
  private async ask(name: string, fn: () => Promise<SmtpReply | void>): Promise<SmtpReply | undefined> {
    try {
      const reply = await this.callHook(fn)
      return reply ? normalizeReply(reply) : undefined
    } catch (err) {
      log.error(`smtp ${name} hook failed`, { session: this.info.id, err })
      return { code: 451, enhanced: '4.3.0', message: 'temporary failure, try again later' }
    }
  }
}

/** A promise (or other thenable) that has not settled yet; a settled Promise is awaited within the same tick. */
function isPending(value: unknown): boolean {
  if (value instanceof Promise) return Bun.peek.status(value) === 'pending'
  return typeof (value as { then?: unknown } | null | undefined)?.then === 'function'
}

/** Hooks get a copy, so they cannot alter the transaction in progress; `notes` is theirs and shared. */
function copyEnvelope(env: SmtpEnvelope): SmtpEnvelope {
  return { ...env, rcptTo: [...env.rcptTo] }
}
