/**
 * The SMTP relay (SMTP_RELAY_URL): nodemailer's SMTP client over a small pool of kept-alive
 * connections. `smtp://user:pass@host:port` upgrades with STARTTLS when the relay offers it
 * (port 587 by default); `smtps://` is TLS from the first byte (port 465 by default).
 * RELAY_TIMEOUT_MS bounds connecting, the greeting and every wait for a reply.
 *
 * The pool is ours rather than nodemailer's pooled transport because that transport reports
 * every timeout and dropped connection as command "CONN", whatever step it hit: it cannot tell
 * "nothing was sent" from "the message went out and no answer came", which is what decides
 * whether a retry may duplicate the message. Driving SMTPConnection ourselves we know the step;
 * in particular the message stream is read only once the relay has answered DATA with 354.
 */
import { Readable } from 'node:stream'
import type { ConnectionOptions } from 'node:tls'
import SMTPConnection, { type SMTPConnectionOptions, type SMTPConnectionSendInfo } from 'nodemailer/lib/smtp-connection'
import type { NodemailerError } from 'nodemailer/lib/errors'
import type { Config } from '../../config'
import { log } from '../../log'
import { classifySmtpError, isDroppedConnection, refusalsOf } from './smtp-errors'
import { RelayError, type Relay, type RelayEnvelope, type RelayResult } from './relay-types'

export interface SmtpRelayOptions {
  url: string
  timeoutMs: number
  /** the name we announce in EHLO */
  clientName: string
  /** extra TLS options, e.g. the CA of a private relay */
  tls?: ConnectionOptions
  maxConnections?: number
  /** a connection is replaced after this many messages */
  maxMessagesPerConnection?: number
  /** an idle connection is closed (QUIT) after this long */
  idleMs?: number
}

export function smtpRelayOptions(config: Pick<Config, 'SMTP_RELAY_URL' | 'RELAY_TIMEOUT_MS' | 'SMTP_HOSTNAME'>): SmtpRelayOptions {
  if (!config.SMTP_RELAY_URL) throw new Error('SMTP_RELAY_URL: not set')
  return { url: config.SMTP_RELAY_URL, timeoutMs: config.RELAY_TIMEOUT_MS, clientName: config.SMTP_HOSTNAME }
}

interface Pooled {
  conn: SMTPConnection
  messages: number
  retired: boolean
  idleTimer?: ReturnType<typeof setTimeout>
}

function connectionOptions(o: SmtpRelayOptions): { options: SMTPConnectionOptions; auth?: { user: string; pass: string } } {
  const url = new URL(o.url)
  const secure = url.protocol === 'smtps:'
  const host = url.hostname.replace(/^\[|\]$/g, '')
  return {
    options: {
      host,
      port: url.port ? Number(url.port) : secure ? 465 : 587,
      secure,
      name: o.clientName,
      connectionTimeout: o.timeoutMs,
      greetingTimeout: o.timeoutMs,
      socketTimeout: o.timeoutMs,
      tls: { ...o.tls },
      logger: false,
    },
    auth: url.username ? { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } : undefined,
  }
}

class ConnectionPool {
  private readonly idle: Pooled[] = []
  private readonly waiting: (() => void)[] = []
  private open = 0
  private closed = false
  private readonly max: number
  private readonly maxMessages: number
  private readonly idleMs: number
  private readonly setup: ReturnType<typeof connectionOptions>

  constructor(o: SmtpRelayOptions) {
    this.max = o.maxConnections ?? 5
    this.maxMessages = o.maxMessagesPerConnection ?? 100
    this.idleMs = o.idleMs ?? 30_000
    this.setup = connectionOptions(o)
  }

  /** An idle connection, a new one while fewer than `max` are open, else the next one released. */
  async acquire(): Promise<Pooled> {
    for (;;) {
      if (this.closed) throw new RelayError('outbound_relay_failed', 'the relay is shut down', false)
      const ready = this.idle.pop()
      if (ready) {
        clearTimeout(ready.idleTimer)
        return ready
      }
      if (this.open < this.max) return this.connect()
      await new Promise<void>(resolve => this.waiting.push(resolve))
    }
  }

  private async connect(): Promise<Pooled> {
    const conn = new SMTPConnection(this.setup.options)
    const p: Pooled = { conn, messages: 0, retired: false }
    this.open++
    // Failures reach us through the callbacks below; the 'error' event would otherwise crash the process.
    conn.on('error', () => {})
    conn.on('end', () => this.retire(p))
    let phase: 'connect' | 'auth' = 'connect'
    try {
      await new Promise<void>((resolve, reject) => {
        conn.once('error', reject)
        conn.connect(err => (err ? reject(err) : resolve()))
      })
      phase = 'auth'
      if (this.setup.auth) {
        const auth = this.setup.auth
        await new Promise<void>((resolve, reject) => conn.login(auth, err => (err ? reject(err) : resolve())))
      }
      conn.removeAllListeners('error')
      conn.on('error', () => {})
      return p
    } catch (error) {
      this.retire(p)
      throw classifySmtpError(error as NodemailerError, phase, false)
    }
  }

  /** Back to the pool after a transaction; replaced once it has carried maxMessages. */
  release(p: Pooled) {
    if (p.retired) return
    if (this.closed || p.messages >= this.maxMessages) return this.retire(p, true)
    this.idle.push(p)
    p.idleTimer = setTimeout(() => this.retire(p, true), this.idleMs)
    p.idleTimer.unref?.()
    this.waiting.shift()?.()
  }

  /** After a refused transaction: RSET, then back to the pool (or closed if RSET fails). */
  reset(p: Pooled) {
    if (p.retired) return
    p.conn.reset(err => (err ? this.retire(p) : this.release(p)))
  }

  /** Closes a connection for good; safe to call more than once. */
  retire(p: Pooled, graceful = false) {
    if (p.retired) return
    p.retired = true
    this.open--
    clearTimeout(p.idleTimer)
    const at = this.idle.indexOf(p)
    if (at >= 0) this.idle.splice(at, 1)
    if (graceful) p.conn.quit()
    else p.conn.close()
    this.waiting.shift()?.()
  }

  close() {
    this.closed = true
    for (const p of [...this.idle]) this.retire(p, true)
    for (const wake of this.waiting.splice(0)) wake()
  }
}

/** One transaction on a connection. `dataStarted` turns true once the relay has asked for the message (354). */
function transact(p: Pooled, envelope: RelayEnvelope, data: Buffer): { done: Promise<SMTPConnectionSendInfo>; dataStarted: () => boolean } {
  let started = false
  const message = new Readable({
    read() {
      started = true
      this.push(data)
      this.push(null)
    },
  })
  const done = new Promise<SMTPConnectionSendInfo>((resolve, reject) =>
    p.conn.send({ from: envelope.from, to: envelope.to, size: data.byteLength }, message, (err, info) => (err ? reject(err) : resolve(info))),
  )
  return { done, dataStarted: () => started }
}

export function createSmtpRelay(options: SmtpRelayOptions): Relay {
  const pool = new ConnectionPool(options)
  return {
    kind: 'smtp',
    async send(envelope: RelayEnvelope, raw: string): Promise<RelayResult> {
      if (!envelope.to.length) throw new RelayError('outbound_relay_failed', 'no recipients', false)
      const data = Buffer.from(raw)
      for (let attempt = 1; ; attempt++) {
        const p = await pool.acquire()
        const reused = p.messages > 0
        p.messages++
        const t = transact(p, envelope, data)
        try {
          const info = await t.done
          pool.release(p)
          return {
            accepted: info.accepted,
            rejected: info.rejected,
            response: info.response,
            refusals: refusalsOf(info.rejectedErrors as NodemailerError[] | undefined),
          }
        } catch (error) {
          const e = error as NodemailerError
          // a refusal leaves the session usable after RSET; anything else ends it
          if ((e.code === 'EENVELOPE' || e.code === 'EMESSAGE') && e.responseCode !== 421) pool.reset(p)
          else pool.retire(p)
          if (reused && attempt === 1 && isDroppedConnection(e, t.dataStarted())) {
            log.debug('relay dropped an idle connection; retrying on a new one', { code: e.code })
            continue
          }
          throw classifySmtpError(e, 'transaction', t.dataStarted())
        }
      }
    },
    async close() {
      pool.close()
    },
  }
}
