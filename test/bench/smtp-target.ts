/**
 * One SMTP receiver of the ingest benchmark, in a process of its own:
 * `bun test/bench/smtp-target.ts <smtp-server|noop|durable> <port>`.
 *
 * - smtp-server: nodemailer's smtp-server with no processing (onData drains the stream and
 *   calls back), the protocol-only baseline.
 * - noop: our listener (src/smtp) with hooks that accept at once, the protocol layer alone.
 * - durable: our listener with the service's own hooks (src/mail/inbound): each message parsed,
 *   authenticated (SPF/DKIM/DMARC with mailauth against in-memory DNS, BENCH_DNS) and stored in
 *   PostgreSQL (DATABASE_URL) with its thread and routing before the 250, concurrent sessions
 *   sharing transactions (group commit). The same pool size and options as the service (openDatabase).
 *
 * Runs until SIGTERM.
 */
import { SMTPServer } from 'smtp-server'
import { loadConfig } from '../../src/config'
import { createContext } from '../../src/context'
import { ServerKeys } from '../../src/crypto'
import { openDatabase } from '../../src/db/client'
import { memoryResolver, type MemoryRecords } from '../../src/dns/resolver'
import { setLogLevel } from '../../src/log'
import { inboundHooks } from '../../src/mail/inbound/smtp-hooks'
import { smtpOptions } from '../../src/roles'
import { startSmtpServer } from '../../src/smtp/server'
import { PLUGINS } from '../../src/plugins'

const [mode, portArg] = process.argv.slice(2)
const port = Number(portArg)
if (!mode || !Number.isInteger(port)) throw new Error('usage: smtp-target.ts <smtp-server|noop|durable> <port>')

const SECRET = 'bench-secret-0123456789abcdef0123456789'
let stop: () => Promise<void>

if (mode === 'smtp-server') {
  const server = new SMTPServer({
    disableReverseLookup: true,
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, callback) {
      stream.on('data', () => {})
      stream.on('end', () => callback())
    },
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => resolve())
  })
  stop = () => new Promise<void>(resolve => server.close(() => resolve()))
} else if (mode === 'noop' || mode === 'durable') {
  const config = loadConfig({
    ...process.env,
    SMTP_PORT: String(port),
    HOST: '127.0.0.1',
    SECRET_KEY: SECRET,
    // one JSON line per connection (not per message), to /dev/null: part of the cost, as in production
    LOG_LEVEL: 'info',
  })
  setLogLevel(config.LOG_LEVEL)
  if (mode === 'noop') {
    const smtp = await startSmtpServer(smtpOptions(config), { onRcptTo: async () => {}, onData: async () => {} })
    stop = () => smtp.stop(1000)
  } else {
    if (!config.DATABASE_URL) throw new Error('durable target needs DATABASE_URL')
    const db = await openDatabase(config)
    const records = JSON.parse(process.env.BENCH_DNS ?? '{}') as MemoryRecords
    const ctx = createContext(config, db.sql, new ServerKeys(SECRET), { plugins: PLUGINS, resolver: memoryResolver(records) })
    const smtp = await startSmtpServer(smtpOptions(config), inboundHooks(ctx))
    stop = async () => {
      await smtp.stop(1000)
      await db.close()
    }
  }
} else {
  throw new Error(`unknown target ${mode}`)
}

process.once('SIGTERM', () => void stop().finally(() => process.exit(0)))
