/**
 * The SMTP relay of the outbound benchmark, in a process of its own:
 * `bun test/bench/outbound-relay.ts <smtp-port> <control-port>`.
 *
 * nodemailer's smtp-server accepting every message without processing it: it drains the data,
 * notes whether the first bytes are a DKIM-Signature header (our signature goes in front of
 * the message), keeps the first three messages whole as samples and answers 250. On the
 * control port: GET /stats gives {count, dkim_signed, accepted_at (epoch ms per message),
 * samples}; POST /reset starts over.
 */
import { SMTPServer } from 'smtp-server'

const [smtpPortArg, controlPortArg] = process.argv.slice(2)
const smtpPort = Number(smtpPortArg)
const controlPort = Number(controlPortArg)
if (!Number.isInteger(smtpPort) || !Number.isInteger(controlPort)) throw new Error('usage: outbound-relay.ts <smtp-port> <control-port>')

const SAMPLES = 3
const now = () => performance.timeOrigin + performance.now()
let acceptedAt: number[] = []
let signed = 0
let samples: string[] = []

const server = new SMTPServer({
  disableReverseLookup: true,
  authOptional: true,
  disabledCommands: ['STARTTLS'],
  logger: false,
  size: 50 * 1024 * 1024,
  onData(stream, _session, callback) {
    const keep = samples.length < SAMPLES
    const chunks: Buffer[] = []
    let first = true
    stream.on('data', (chunk: Buffer) => {
      if (first) {
        first = false
        if (chunk.subarray(0, 15).toString('latin1').toLowerCase() === 'dkim-signature:') signed++
      }
      if (keep) chunks.push(chunk)
    })
    stream.on('end', () => {
      acceptedAt.push(now())
      if (keep && samples.length < SAMPLES) samples.push(Buffer.concat(chunks).toString('utf8'))
      callback()
    })
  },
})
await new Promise<void>((resolve, reject) => {
  server.once('error', reject)
  server.listen(smtpPort, '127.0.0.1', () => resolve())
})

Bun.serve({
  hostname: '127.0.0.1',
  port: controlPort,
  fetch(req) {
    const path = new URL(req.url).pathname
    if (path === '/stats') return Response.json({ count: acceptedAt.length, dkim_signed: signed, accepted_at: acceptedAt, samples })
    if (path === '/reset' && req.method === 'POST') {
      acceptedAt = []
      signed = 0
      samples = []
      return new Response('ok')
    }
    if (path === '/health') return new Response('ok')
    return new Response('not found', { status: 404 })
  },
})
