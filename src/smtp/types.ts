/**
 * Contract between the SMTP protocol engine and whoever decides what to do with the mail.
 * The engine speaks RFC 5321; every policy decision (who may connect, which recipients exist,
 * where a message is stored) is delegated to these hooks.
 */
import type { ConnectionBudget } from '../connection-budget'

/** One SMTP reply. `enhanced` (RFC 3463, e.g. '5.1.1') defaults to `<class>.0.0` when omitted. */
export interface SmtpReply {
  code: number
  enhanced?: string
  message: string
}

/** A snapshot of the connection, handed to every hook. `id` also appears in the Received: header. */
export interface SmtpSessionInfo {
  id: string
  remoteAddress: string
  /** The EHLO/HELO argument, once given (cleared by STARTTLS, which requires a new EHLO). */
  helo?: string
  tls: boolean
}

/** The transaction being built by MAIL/RCPT. Hooks get a copy; changing it has no effect, but for `notes`. */
export interface SmtpEnvelope {
  /** '' for the null reverse-path `<>` (bounces). */
  mailFrom: string
  rcptTo: string[]
  /** The SIZE= declared at MAIL FROM (RFC 1870), if any. */
  size?: number
  body?: '7BIT' | '8BITMIME'
  /** The client sent the SMTPUTF8 parameter (RFC 6531): addresses and headers may be UTF-8. */
  smtputf8: boolean
  /**
   * The hooks' own notes on this transaction, for its later hooks (what onRcptTo looked up,
   * for onData). The one part of a hook's copy that is shared: the engine never reads it, and it
   * goes with the transaction (RSET, a new MAIL, EHLO, STARTTLS, the end of DATA).
   */
  notes: Map<string, unknown>
}

/**
 * Decision hooks. Returning nothing accepts; returning a reply with code >= 400 rejects with it;
 * returning a 2xx reply accepts with that text. A thrown error becomes a temporary failure
 * (451 4.3.0, or 421 at connect), so a database outage never turns into a permanent bounce.
 */
export interface SmtpHooks {
  /** A reply >= 400 refuses the connection: 554 keeps it open answering 503 until QUIT (RFC 5321 3.1), anything else closes it. */
  onConnect?(s: SmtpSessionInfo): Promise<SmtpReply | void>
  /** SIZE= above maxMessageBytes is rejected by the engine before this is called; use it for e.g. 452/552 storage full. */
  onMailFrom?(s: SmtpSessionInfo, env: SmtpEnvelope): Promise<SmtpReply | void>
  /** e.g. 550 5.1.1 unknown user, 550 5.7.1 relaying denied; void = 250 2.1.5. */
  onRcptTo(s: SmtpSessionInfo, env: SmtpEnvelope, rcpt: string): Promise<SmtpReply | void>
  /**
   * The complete message: exact bytes after dot-unstuffing, CRLF line endings, with the engine's
   * Received: header prepended. The 250 is sent only after this resolves, so commit storage here.
   */
  onData(s: SmtpSessionInfo, env: SmtpEnvelope, message: Uint8Array): Promise<SmtpReply | void>
}

export interface SmtpServerOptions {
  /** Announced in the banner, the EHLO reply and the Received: header. */
  hostname: string
  /** 0 picks a free port; the real one is returned by startSmtpServer. */
  port: number
  /** Address to bind; defaults to 0.0.0.0. */
  host?: string
  /** Advertised as SIZE; larger messages get 552 5.3.4 (at MAIL when declared, else after the final dot). */
  maxMessageBytes: number
  /** RCPT beyond this many accepted recipients gets 452 4.5.3. */
  maxRecipients: number
  /** Connections beyond this get 421 4.7.0 and are closed. */
  maxConnections: number
  /** Protocol errors tolerated per connection; the next one gets 421 4.7.0 and a close. */
  maxBadCommands: number
  /** Silence from the client for this long gets 421 4.4.2 and a close. Hooks in flight do not count. */
  idleTimeoutMs: number
  /** PEM certificate chain and key; enables STARTTLS. */
  tls?: { cert: string; key: string }
  /** Share the port with other processes listening on it with reusePort too (SO_REUSEPORT: the kernel spreads connections). */
  reusePort?: boolean
  /** The connections this process may hold, HTTP's included; default: the process's (src/connection-budget.ts). */
  budget?: ConnectionBudget
}

export interface SmtpServer {
  port: number
  /** Stops accepting, sends 421 4.3.2 to idle sessions, lets DATA in flight finish for up to graceMs, then drops the rest. */
  stop(graceMs?: number): Promise<void>
}
