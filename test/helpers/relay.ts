/** nodemailer's smtp-server on loopback as the outbound relay of tests: records what it accepts. */
import { SMTPServer } from 'smtp-server'

export interface RelayMessage {
  from: string
  to: string[]
  raw: string
}

export interface TestRelay {
  url: string
  port: number
  messages: RelayMessage[]
  /** makes the server hold every DATA without answering (a relay that never answers) */
  hang: boolean
  /** recipients the relay refuses at RCPT TO, with its reply (`550 5.1.1 user unknown`) */
  refuse: Map<string, string>
  waitFor(count: number, timeoutMs?: number): Promise<RelayMessage[]>
  stop(): Promise<void>
}

export async function startTestRelay(): Promise<TestRelay> {
  const messages: RelayMessage[] = []
  const relay: Partial<TestRelay> = { messages, hang: false, refuse: new Map() }
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    disableReverseLookup: true,
    logger: false,
    onRcptTo(address, _session, callback) {
      const reply = relay.refuse!.get(address.address.toLowerCase())
      if (!reply) return callback()
      const [, code, text] = /^(\d{3}) (.*)$/.exec(reply)!
      callback(Object.assign(new Error(text), { responseCode: Number(code) }))
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        if (relay.hang) return // never answer
        messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map(r => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        })
        callback(null)
      })
    },
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const port = (server.server.address() as { port: number }).port
  return Object.assign(relay, {
    port,
    url: `smtp://127.0.0.1:${port}`,
    async waitFor(count: number, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs
      while (messages.length < count && Date.now() < deadline) await Bun.sleep(20)
      return messages
    },
    stop: () => new Promise<void>(resolve => server.close(() => resolve())),
  }) as TestRelay
}
