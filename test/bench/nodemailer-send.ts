/**
 * The baselines of the outbound benchmark, run as their own process:
 * `bun test/bench/nodemailer-send.ts <relay-port> <connections> <seconds> <max-sends> <from> <to> <message-file> [<dkim-key-file> <domain> <selector>]`.
 *
 * nodemailer's pooled SMTP transport with `connections` connections to the relay sends one
 * prebuilt message again and again, BENCH_NODEMAILER_CLIENTS sends in flight (default
 * `connections`), for 1 s of warm-up plus
 * `seconds`, and at most `max-sends` in all. Without a key the message is sent as it is (built
 * and DKIM-signed once, before this process starts); with one, nodemailer DKIM-signs every
 * message itself (its `dkim` option: RSA, relaxed/relaxed, the header fields we sign).
 * Prints one JSON object: sends, ok, errors, the measured window (epoch ms), p50/p99 send
 * latency in it, and this process's CPU time per send over the whole run.
 */
import nodemailer from 'nodemailer'
import { SIGNED_HEADERS } from '../../src/mail/outbound/dkim'
import { closedLoop, epochMs, loopSummary } from './common'

const [portArg, connectionsArg = '10', secondsArg = '5', maxArg = '50000', from, to, messageFile, keyFile, domainName, keySelector] = process.argv.slice(2)
if (!portArg || !from || !to || !messageFile || (keyFile && (!domainName || !keySelector))) {
  throw new Error('usage: nodemailer-send.ts <relay-port> <connections> <seconds> <max-sends> <from> <to> <message-file> [<dkim-key-file> <domain> <selector>]')
}
const connections = Number(connectionsArg)
/** sends in flight (BENCH_NODEMAILER_CLIENTS); default: one per pooled connection */
const clients = Number(process.env.BENCH_NODEMAILER_CLIENTS ?? connections)
const durationMs = Number(secondsArg) * 1000
const maxSends = Number(maxArg)
const raw = await Bun.file(messageFile).text()
const envelope = { from, to: [to] }

const transport = nodemailer.createTransport({
  host: '127.0.0.1',
  port: Number(portArg),
  secure: false,
  ignoreTLS: true,
  pool: true,
  maxConnections: connections,
  maxMessages: Infinity,
  connectionTimeout: 10_000,
  greetingTimeout: 10_000,
  socketTimeout: 30_000,
  dkim: keyFile
    ? { domainName: domainName!, keySelector: keySelector!, privateKey: await Bun.file(keyFile).text(), headerFieldNames: SIGNED_HEADERS.join(':') }
    : undefined,
})

const errorSamples = new Map<string, number>()
const result = await closedLoop({ connections: clients, durationMs, maxSends, clock: epochMs }, async () => {
  try {
    await transport.sendMail({ envelope, raw })
    return true
  } catch (e) {
    const what = (e as Error).message
    errorSamples.set(what, (errorSamples.get(what) ?? 0) + 1)
    return false
  }
})
transport.close()
for (const [what, n] of errorSamples) console.error(`nodemailer-send: ${n} x ${what}`)
console.log(JSON.stringify(loopSummary(result)))
