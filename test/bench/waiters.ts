/**
 * Waiters section of `make bench` (issue 19 item 5, issue 28): what many waiting agents cost one
 * service process (src/index.ts, ROLES=api,smtp, SMTP_PROCESSES=1), held by a client process of
 * its own (waiters-client.ts), mail sent by another (smtp-rate.ts):
 *
 * - 10,000 long-polls (`GET /v1/emails?wait=60&inbox_id=...`) over 1,000 inboxes, each on a
 *   connection of its own, each asked again as soon as it is answered: the service's resident
 *   memory before and with them, per waiter; its CPU while they wait and nothing arrives;
 * - one message to one inbox, and how many long-polls it answered (its inbox's 10: a long-poll
 *   filtered to an inbox wakes for that inbox's mail only);
 * - mail over SMTP at BENCH_WAITERS_RATE (100) msg/s for BENCH_WAITERS_SECONDS (20), to the
 *   inboxes in turn: per message and waiter, the sender's 250 to the answer complete at the
 *   client (one epoch clock), p50/p99/max and nothing missing; the service's CPU (/proc, the
 *   process and its children) and PostgreSQL's (the database's backends) over the run, per
 *   message and per answer (the guard's unit: a loaded machine that falls behind lets polls run
 *   out of time, and each of those answers too), and the service's peak RSS (VmHWM). Target:
 *   p99 < 20 ms, peak RSS < 600 MB, the service under 50% of a core;
 * - then, in a fresh service process, 10,000 idle SMTP sessions (EHLO said, nothing more):
 *   memory per session.
 *
 * The baseline of each is its process idle (its memory before). The service's open-file limit is
 * this machine's (ulimit -n); its connection budget is that less 256.
 */
import { rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { readFileSync } from 'node:fs'
import net from 'node:net'
import type { Sql } from '../../src/db/client'
import { createOrgCommand, setApiLimitCommand } from '../../src/admin/commands'
import { createManagedInbox } from '../../src/inboxes/service'
import { report } from './guard'
import {
  databaseCpu,
  databaseCpuSpent,
  freePort,
  startDnsStub,
  percentile,
  processCpuMicros,
  runJson,
  startService,
  stopAll,
  waitForSmtpGreeting,
} from './common'

const WAITERS = Number(process.env.BENCH_WAITERS ?? 10_000)
const INBOXES = Number(process.env.BENCH_WAITER_INBOXES ?? 1_000)
const SESSIONS = Number(process.env.BENCH_IDLE_SESSIONS ?? 10_000)
const RATE = Number(process.env.BENCH_WAITERS_RATE ?? 100)
const SECONDS = Number(process.env.BENCH_WAITERS_SECONDS ?? 20)
/** how long the parked long-polls' idle CPU is read */
const IDLE_SECONDS = 5
const MAIL_FROM = 'bench@sender.bench.example'
const MANAGED_DOMAIN = 'agents.bench.local'
const dir = import.meta.dir

const statusKb = (pid: number, field: 'VmRSS' | 'VmHWM') => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`${field}:\\s+(\\d+)`))![1])
const rssKb = (pid: number) => statusKb(pid, 'VmRSS')

type Counts = { opened: number; failed: number; answered: number; with_mail: number; closed: number; errors: number }

/** The client process: one JSON line when its connections are open, one more per `report()` or `arrivals()`. */
function holder(argv: string[]) {
  const proc = Bun.spawn([process.execPath, `${dir}/waiters-client.ts`, ...argv], { stdin: 'pipe', stdout: 'pipe', stderr: 'inherit' })
  const lines = (async function* () {
    let buffered = ''
    for await (const chunk of proc.stdout.pipeThrough(new TextDecoderStream())) {
      buffered += chunk
      let at: number
      while ((at = buffered.indexOf('\n')) >= 0) {
        yield JSON.parse(buffered.slice(0, at)) as Counts & { arrivals: [number, number, number][] }
        buffered = buffered.slice(at + 1)
      }
    }
  })()
  const next = async () => (await lines.next()).value!
  const ask = async (command: string) => (proc.stdin.write(`${command}\n`), proc.stdin.flush(), next())
  return {
    next,
    report: () => ask('report'),
    /** the marked messages answered since the last call: [i, epoch ms, connection] */
    arrivals: () => ask('arrivals'),
    exit: async () => (proc.stdin.write('exit\n'), proc.stdin.flush(), await proc.exited),
  }
}

/** One message to `to` over SMTP, waiting for its 250. */
async function deliver(port: number, to: string) {
  const socket = net.connect(port, '127.0.0.1')
  let text = ''
  socket.on('data', chunk => (text += chunk.toString()))
  const until = async (re: RegExp) => {
    for (let i = 0; i < 1000 && !re.test(text); i++) await Bun.sleep(10)
  }
  await until(/^220 /m)
  socket.write(`EHLO bench.example\r\nMAIL FROM:<sam@sender.bench.example>\r\nRCPT TO:<${to}>\r\nDATA\r\n`)
  await until(/^354 /m)
  text = ''
  socket.write('Subject: wake\r\n\r\nfor one inbox\r\n.\r\n')
  await until(/^\d{3} /m)
  socket.end()
  if (!text.startsWith('250')) throw new Error(`the message was not accepted: ${text}`)
}

/** What the wake run measured. */
interface WakeRun {
  sent: number
  acked: number
  lagMs: number
  wakes: number
  missing: number
  twice: number
  p50: number
  p99: number
  max: number
  seconds: number
  serviceCpuMs: number
  databaseCpuMs: number | null
  peakRssKb: number
  answered: number
  /** answers that held no mail: a long-poll's 60 s ran out (the run outlasted it on a loaded machine) */
  empty: number
  errors: number
}

/**
 * Mail at RATE msg/s for SECONDS to `addresses` in turn, while the client's long-polls wait on
 * them (connection j on address j mod their number): per message and waiter, 250 to answer.
 * The CPU is read from the first message to one second after the last 250.
 */
async function wakeRun(run: { sql: Sql; smtpPort: number; servicePid: number; polls: ReturnType<typeof holder>; addresses: string[] }): Promise<WakeRun> {
  const files = { template: `${tmpdir()}/agent-mail-waiters-${crypto.randomUUID()}.eml`, rcpt: `${tmpdir()}/agent-mail-waiters-${crypto.randomUUID()}.json` }
  await Bun.write(
    files.template,
    [
      'From: Bench <bench@sender.bench.example>',
      'To: <agents@agents.bench.local>',
      'Subject: wake @@MARK@@',
      'Message-ID: <@@ID@@@sender.bench.example>',
      '',
      'hello',
      '',
    ].join('\r\n'),
  )
  await Bun.write(files.rcpt, JSON.stringify(run.addresses))
  const send = (count: number, prefix: string) =>
    runJson<{ count: number; acked: number; max_lag_ms: number; acks: [number, number][] }>([
      process.execPath,
      `${dir}/smtp-rate.ts`,
      String(run.smtpPort),
      '8',
      String(RATE),
      String(count),
      MAIL_FROM,
      `@${files.rcpt}`,
      files.template,
      prefix,
    ])
  try {
    // warm-up: its marks (warm-N) are not the run's (run-N), which the client notes
    await send(RATE * 2, 'warm')
    await Bun.sleep(1000)
    const counts0 = await run.polls.arrivals()
    const service0 = processCpuMicros(run.servicePid)!
    const database0 = await databaseCpu(run.sql)
    const started = performance.now()
    const sender = await send(RATE * SECONDS, 'run')
    await Bun.sleep(1000)
    const seconds = (performance.now() - started) / 1000
    const serviceCpuMs = (processCpuMicros(run.servicePid)! - service0) / 1000
    const database = databaseCpuSpent(database0, await databaseCpu(run.sql))
    const peakRssKb = statusKb(run.servicePid, 'VmHWM')
    const got = await run.polls.arrivals()

    const ackAt = new Map(sender.acks)
    const seen = new Set<string>()
    const latencies: number[] = []
    let twice = 0
    for (const [i, at, j] of got.arrivals) {
      const ack = ackAt.get(i)
      if (ack === undefined) continue
      if (seen.has(`${i} ${j}`)) twice++
      else seen.add(`${i} ${j}`), latencies.push(at - ack)
    }
    // connection j waits on address j mod n: message i has the waiters of address i mod n
    const n = run.addresses.length
    let expected = 0
    for (const [i] of sender.acks) expected += Math.floor(WAITERS / n) + (i % n < WAITERS % n ? 1 : 0)
    latencies.sort((a, b) => a - b)
    return {
      sent: sender.count,
      acked: sender.acked,
      lagMs: sender.max_lag_ms,
      wakes: latencies.length,
      missing: expected - latencies.length,
      twice,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      max: percentile(latencies, 100),
      seconds,
      serviceCpuMs,
      databaseCpuMs: database === null ? null : database / 1000,
      peakRssKb,
      answered: got.answered - counts0.answered,
      empty: got.answered - counts0.answered - (got.with_mail - counts0.with_mail),
      errors: got.errors - counts0.errors,
    }
  } finally {
    await rm(files.template, { force: true })
    await rm(files.rcpt, { force: true })
  }
}

export async function waitersBench(sql: Sql, dbUrl: string): Promise<void> {
  const org = await createOrgCommand(sql, { plan: 'developer', name: 'waiters bench' })
  await setApiLimitCommand(sql, org.org_id, '100000000')
  const inboxes = await sql.begin(async tx => {
    const rows = []
    for (let i = 0; i < INBOXES; i++) rows.push(await createManagedInbox(tx, org.org_id, MANAGED_DOMAIN))
    return rows
  })
  const inboxFile = `${tmpdir()}/agent-mail-waiters-${crypto.randomUUID()}.json`
  await Bun.write(inboxFile, JSON.stringify(inboxes.map(i => i.id)))

  const children: Bun.Subprocess[] = []
  try {
    /** A fresh service process for each phase, so each starts from the same idle memory. */
    // a stub that knows no names answers the authentication's lookups at once
    const dnsPort = await startDnsStub(children)
    const start = async () => {
      const [apiPort, smtpPort] = [await freePort(), await freePort()]
      const service = await startService(children, {
        DATABASE_URL: dbUrl,
        PORT: String(apiPort),
        SMTP_PORT: String(smtpPort),
        HOST: '127.0.0.1',
        ROLES: 'api,smtp',
        MANAGED_DOMAIN,
        SECRET_KEY: 'bench-secret-0123456789abcdef0123456789',
        SMTP_MAX_CONNECTIONS: String(SESSIONS + 100),
        DNS_SERVERS: `127.0.0.1:${dnsPort}`,
        DNS_CACHE_SECONDS: '300',
        LOG_LEVEL: 'warn',
      })
      await waitForSmtpGreeting(smtpPort)
      await Bun.sleep(1000)
      return { service, apiPort, smtpPort, idle: rssKb(service.pid) }
    }
    const { service, apiPort, smtpPort, idle } = await start()
    console.log(
      `\nwaiters: one service process (ROLES=api,smtp); ${WAITERS} long-polls (wait=60, filtered by inbox) over ${INBOXES} inboxes, then ${SESSIONS} idle SMTP sessions, ` +
        `each on a connection of its own from a client process (waiters-client.ts); open-file limit ${readFileSync('/proc/self/limits', 'utf8').match(/Max open files\s+(\d+)/)?.[1]}; load average ${loadavg()[0]!.toFixed(2)} before\n`,
    )

    const polls = holder(['http', String(apiPort), String(WAITERS), org.api_key, inboxFile])
    const opened = await polls.next()
    // parked: what 10,000 waiting long-polls cost while nothing arrives, once the service has
    // answered their first reads (on a loaded machine that takes a while after they connect)
    for (let i = 0, at = processCpuMicros(service.pid)!; i < 30; i++) {
      await Bun.sleep(1000)
      const now = processCpuMicros(service.pid)!
      if (now - at < 50_000) break
      at = now
    }
    const withWaiters = rssKb(service.pid)
    const idleCpu0 = processCpuMicros(service.pid)!
    await Bun.sleep(IDLE_SECONDS * 1000)
    const idleCpuPercent = (processCpuMicros(service.pid)! - idleCpu0) / (IDLE_SECONDS * 1e4)

    const before = await polls.report()
    await deliver(smtpPort, inboxes[0]!.address)
    // its inbox's long-polls answer (up to 15 s on a loaded machine); any other answering would show here too
    const expected = Math.ceil(WAITERS / INBOXES)
    let after = await polls.report()
    for (let i = 0; i < 30 && after.answered - before.answered < expected; i++) {
      await Bun.sleep(500)
      after = await polls.report()
    }
    await Bun.sleep(1000)
    after = await polls.report()

    const rate = await wakeRun({ sql, smtpPort, servicePid: service.pid, polls, addresses: inboxes.map(i => i.address) })
    await polls.exit()
    await stopAll(children.splice(1))

    const second = await start()
    const base = second.idle
    const sessions = holder(['smtp', String(second.smtpPort), String(SESSIONS)])
    const held = await sessions.next()
    await Bun.sleep(2000)
    const withSessions = rssKb(second.service.pid)
    await sessions.exit()

    const perKb = (delta: number, n: number) => ((delta * 1024) / Math.max(1, n) / 1024).toFixed(1)
    console.log(`${'what'.padEnd(34)}${'held'.padStart(8)}${'failed'.padStart(8)}${'RSS MB'.padStart(10)}${'KB each'.padStart(10)}`)
    console.log(`${'service idle (baseline)'.padEnd(34)}${''.padStart(8)}${''.padStart(8)}${(idle / 1024).toFixed(0).padStart(10)}${''.padStart(10)}`)
    console.log(`${'a fresh one, idle (baseline)'.padEnd(34)}${''.padStart(8)}${''.padStart(8)}${(base / 1024).toFixed(0).padStart(10)}${''.padStart(10)}`)
    console.log(
      `${'long-polls waiting'.padEnd(34)}${String(opened.opened).padStart(8)}${String(opened.failed).padStart(8)}${(withWaiters / 1024).toFixed(0).padStart(10)}${perKb(withWaiters - idle, opened.opened).padStart(10)}`,
    )
    console.log(
      `${'idle SMTP sessions'.padEnd(34)}${String(held.opened).padStart(8)}${String(held.failed).padStart(8)}${(withSessions / 1024).toFixed(0).padStart(10)}${perKb(withSessions - base, held.opened).padStart(10)}`,
    )
    console.log(
      `\none message to one of ${INBOXES} inboxes answered ${after.answered - before.answered} long-polls (${after.with_mail - before.with_mail} with the message; ` +
        `its inbox has ${expected} waiters; ${before.answered} had answered before it, ${before.closed} closed); ` +
        `memory per waiter ${perKb(withWaiters - idle, opened.opened)} KB, per idle SMTP session ${perKb(withSessions - base, held.opened)} KB (RSS, the process as a whole)`,
    )
    const core = (ms: number) => `${((ms / (rate.seconds * 1000)) * 100).toFixed(0)}%`
    const perMessage = (ms: number) => (ms / Math.max(1, rate.acked)).toFixed(2)
    console.log(
      `\nwhile parked (${IDLE_SECONDS} s, nothing arriving): the service at ${idleCpuPercent.toFixed(1)}% of a core\n` +
        `mail at ${RATE} msg/s for ${SECONDS} s to the ${INBOXES} inboxes in turn (${rate.acked} of ${rate.sent} accepted, the sender at most ${rate.lagMs} ms behind its schedule): ` +
        `${rate.wakes} wakes (${rate.missing} missing, ${rate.twice} twice), ${rate.answered} answers (${rate.empty} of them empty: a poll's 60 s ran out; ${rate.errors} not 200); ` +
        `per answer (and the poll that follows it) the service spent ${(rate.serviceCpuMs / Math.max(1, rate.answered)).toFixed(3)} ms of CPU` +
        `${rate.databaseCpuMs === null ? '' : `, PostgreSQL ${(rate.databaseCpuMs / Math.max(1, rate.answered)).toFixed(3)} ms`}\n`,
    )
    const col = (v: string | number) => String(v).padStart(10)
    console.log(`${''.padEnd(34)}${col('p50 ms')}${col('p99 ms')}${col('max ms')}${col('peak MB')}${col('CPU')}${col('ms/msg')}`)
    console.log(
      `${'250 to the answer at the client'.padEnd(34)}${col(rate.p50.toFixed(2))}${col(rate.p99.toFixed(2))}${col(rate.max.toFixed(2))}${col((rate.peakRssKb / 1024).toFixed(0))}${col(core(rate.serviceCpuMs))}${col(perMessage(rate.serviceCpuMs))}`,
    )
    if (rate.databaseCpuMs !== null)
      console.log(
        `${'PostgreSQL (the database backends)'.padEnd(34)}${col('')}${col('')}${col('')}${col('')}${col(core(rate.databaseCpuMs))}${col(perMessage(rate.databaseCpuMs))}`,
      )
    // per answer: a message's cost is 10 answers on a quiet machine, more where polls ran out of time meanwhile
    report('waiters', {
      unit: 'answer',
      cpu_ms_per_unit: rate.serviceCpuMs / Math.max(1, rate.answered),
      ...(rate.databaseCpuMs !== null && { db_ms_per_unit: rate.databaseCpuMs / Math.max(1, rate.answered) }),
      headline: {
        p50_ms: rate.p50,
        p99_ms: rate.p99,
        peak_rss_mb: Math.round(rate.peakRssKb / 1024),
        core_percent: Math.round((rate.serviceCpuMs / (rate.seconds * 1000)) * 100),
        idle_core_percent: Math.round(idleCpuPercent * 10) / 10,
        service_ms_per_message: Math.round((rate.serviceCpuMs / Math.max(1, rate.acked)) * 100) / 100,
      },
    })
    const met = rate.p99 < 20 && rate.peakRssKb < 600 * 1024 && rate.serviceCpuMs < rate.seconds * 500 && rate.missing === 0
    console.log(`target: p99 < 20 ms, peak RSS < 600 MB, the service under 50% of a core, every wake answered: ${met ? 'met' : 'NOT met'}`)
  } finally {
    await stopAll(children)
    await rm(inboxFile, { force: true })
  }
}
