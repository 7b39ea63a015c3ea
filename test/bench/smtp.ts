/**
 * SMTP section of `make bench`: 10 KB DKIM-signed messages delivered by N parallel sessions
 * (1, 20, 100) from a separate load process (smtp-load.ts) to three receivers, each in a
 * process of its own (smtp-target.ts):
 *
 * - nodemailer's smtp-server with no processing: the protocol-only baseline;
 * - our listener with no-op hooks: the protocol layer alone, to compare with smtp-server;
 * - the service itself (src/index.ts, ROLES=smtp) with SMTP_PROCESSES unset: one process per
 *   core on one port (reusePort), the durable path in each, sender DNS from a loopback stub;
 * - our listener with the service's hooks: the full durable path (postal-mime, SPF/DKIM/DMARC
 *   with mailauth against in-memory DNS for the sender domain, the message stored with its
 *   thread and routing in a PostgreSQL transaction shared with concurrent sessions, 250 after
 *   the commit).
 *
 * Prints messages/s and p50/p99 from the end of DATA to the 250. Targets on a 2-core machine:
 * at least 1,000 durably committed messages/s at 20 sessions, and the protocol layer alone at
 * least 1.5x smtp-server's rate. Nothing is asserted: the figures are for reading.
 */
import { generateKeyPairSync } from 'node:crypto'
import { rm } from 'node:fs/promises'
import { availableParallelism, loadavg, tmpdir } from 'node:os'
import { dkimSign } from 'mailauth/lib/dkim/sign'
import type { Sql } from '../../src/db/client'
import type { MemoryRecords } from '../../src/dns/resolver'
import { createOrgCommand } from '../../src/admin/commands'
import { createManagedInbox } from '../../src/inboxes/service'
import { report } from './guard'
import {
  databaseCpu,
  databaseCpuSpent,
  freePort,
  processCpuMicros,
  processTreeCpuMicros,
  profileArgs,
  refreshStatistics,
  runJson,
  stopAll,
  waitForSmtpGreeting,
} from './common'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const SESSIONS = (process.env.BENCH_SMTP_SESSIONS ?? '1,20,100').split(',').map(Number)
const MESSAGE_BYTES = 10 * 1024
const dir = import.meta.dir

const MANAGED_DOMAIN = 'agents.bench.local'
const SENDER_DOMAIN = 'sender.bench.example'
const MAIL_FROM = `bench@${SENDER_DOMAIN}`
const SELECTOR = 'bench'

interface Result {
  sessions: number
  messages: number
  completed: number
  errors: number
  mps: number
  p50_ms: number
  p99_ms: number
  client_cpu_us_per_msg: number
  /** the receiver process's CPU time per completed message; null where /proc is not available */
  server_cpu_us_per_msg?: number | null
  /** the same for the receiver's main (JavaScript) thread alone, without its worker threads */
  server_main_cpu_us_per_msg?: number | null
  /** durable target only: the CPU time of its PostgreSQL backends per completed message */
  db_cpu_us_per_msg?: number | null
}

const TARGETS = [
  { mode: 'smtp-server', label: 'smtp-server, no processing' },
  { mode: 'noop', label: 'our listener, no-op hooks' },
  { mode: 'durable', label: 'durable ingest (full path)' },
  { mode: 'service', label: 'service, default processes' },
] as const
type Mode = (typeof TARGETS)[number]['mode']

/** SPF for 127.0.0.1, an RSA-2048 DKIM key and DMARC p=reject, as the sender domain would publish. */
function senderDomain(): { records: MemoryRecords; privateKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const pub = publicKey.export({ type: 'spki', format: 'der' }).toString('base64')
  return {
    records: {
      [`${SELECTOR}._domainkey.${SENDER_DOMAIN}`]: { TXT: [[`v=DKIM1; k=rsa; p=${pub}`]] },
      [SENDER_DOMAIN]: { TXT: [['v=spf1 ip4:127.0.0.1 -all']] },
      [`_dmarc.${SENDER_DOMAIN}`]: { TXT: [['v=DMARC1; p=reject']] },
    },
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
  }
}

/** A multipart/alternative (text and HTML) message of `filler` body lines, CRLF line endings. */
function unsignedMessage(rcpt: string, filler: number): string {
  const sentence = 'The quarterly figures are attached below; reply with questions or corrections'
  const text = Array.from({ length: filler }, (_, i) => `${String(i).padStart(3, '0')} ${sentence}`)
  const html = text.slice(0, Math.ceil(filler / 2)).map(line => `<p>${line}</p>`)
  return [
    `From: Bench Sender <${MAIL_FROM}>`,
    `To: <${rcpt}>`,
    'Subject: Quarterly figures',
    `Date: ${new Date().toUTCString()}`,
    `Message-ID: <bench-${crypto.randomUUID()}@${SENDER_DOMAIN}>`,
    'MIME-Version: 1.0',
    'Content-Type: multipart/alternative; boundary="bench-boundary"',
    '',
    '--bench-boundary',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: 7bit',
    '',
    ...text,
    '--bench-boundary',
    'Content-Type: text/html; charset=utf-8',
    'Content-Transfer-Encoding: 7bit',
    '',
    `<html><body>${html.join('\r\n')}</body></html>`,
    '--bench-boundary--',
    '',
  ].join('\r\n')
}

/** The message, DKIM-signed once up front (relaxed/relaxed), as close to MESSAGE_BYTES as whole lines allow. */
async function signedMessage(rcpt: string, privateKey: string): Promise<string> {
  const sign = async (message: string) => {
    const r = await dkimSign(message, {
      canonicalization: 'relaxed/relaxed',
      signatureData: [{ signingDomain: SENDER_DOMAIN, selector: SELECTOR, privateKey }],
    } as never)
    if (!r.signatures) throw new Error(`DKIM signing failed: ${JSON.stringify(r.errors)}`)
    return r.signatures + message
  }
  const signatureBytes = (await sign(unsignedMessage(rcpt, 1))).length - unsignedMessage(rcpt, 1).length
  let filler = 1
  while (filler < 1000 && unsignedMessage(rcpt, filler + 1).length + signatureBytes <= MESSAGE_BYTES) filler++
  return sign(unsignedMessage(rcpt, filler))
}

export async function smtpBench(sql: Sql, dbUrl: string): Promise<void> {
  const org = await createOrgCommand(sql, { plan: 'developer', name: 'smtp bench' })
  const inbox = await sql.begin(tx => createManagedInbox(tx, org.org_id, MANAGED_DOMAIN))
  const { records, privateKey } = senderDomain()
  const message = await signedMessage(inbox.address, privateKey)
  const messageFile = `${tmpdir()}/agent-mail-bench-${crypto.randomUUID()}.eml`
  await Bun.write(messageFile, message)

  console.log(
    `\nsmtp: ${message.length}-byte DKIM-signed messages, ${SECONDS} s per run after 1 s of warm-up, one connection per session, ` +
      `RSET/MAIL/RCPT/DATA pipelined; durable path after a 2 s history, statistics refreshed before each run; latency = final "." to 250; load average ${loadavg()[0]!.toFixed(2)} before the runs\n`,
  )
  // All three receivers are up (idle) for the whole section and the loads alternate between
  // them at each session count, so the figures compared in a ratio are taken seconds apart:
  // on a shared machine, background load drifts over a minute.
  const results = new Map<Mode, Result[]>(TARGETS.map(t => [t.mode, []]))
  const children: Bun.Subprocess[] = []
  try {
    const ports = new Map<Mode, number>()
    const pids = new Map<Mode, number>()
    // the service as started in production (src/index.ts, ROLES=smtp, SMTP_PROCESSES unset: one
    // process per core on one port), resolving the sender domain through a loopback DNS stub
    const dnsPort = await freePort()
    children.push(
      Bun.spawn([process.execPath, `${dir}/dns-stub.ts`, String(dnsPort)], {
        stdout: 'ignore',
        stderr: 'inherit',
        env: { ...process.env, BENCH_DNS: JSON.stringify(records) },
      }),
    )
    for (const target of TARGETS) {
      const port = await freePort()
      if (target.mode === 'service') {
        const env: Record<string, string | undefined> = {
          ...process.env,
          DATABASE_URL: dbUrl,
          MANAGED_DOMAIN,
          SMTP_HOSTNAME: 'mx.bench.local',
          ROLES: 'smtp',
          SMTP_PORT: String(port),
          HOST: '127.0.0.1',
          SECRET_KEY: 'bench-secret-0123456789abcdef0123456789',
          DNS_SERVERS: `127.0.0.1:${dnsPort}`,
          LOG_LEVEL: 'info',
        }
        delete env.SMTP_PROCESSES
        children.push(Bun.spawn([process.execPath, `${dir}/../../src/index.ts`], { stdout: 'ignore', stderr: 'inherit', env }))
        await waitForSmtpGreeting(port)
        // the extra processes listen once the first says it started; a greeting from it alone is not enough
        await Bun.sleep(3000)
        ports.set(target.mode, port)
        pids.set(target.mode, children.at(-1)!.pid)
        continue
      }
      children.push(
        // BENCH_PROFILE_DIR: a CPU profile of the durable receiver, written when it exits
        Bun.spawn([process.execPath, ...(target.mode === 'durable' ? profileArgs() : []), `${dir}/smtp-target.ts`, target.mode, String(port)], {
          stdout: 'ignore',
          stderr: 'inherit',
          env: { ...process.env, DATABASE_URL: dbUrl, MANAGED_DOMAIN, SMTP_HOSTNAME: 'mx.bench.local', BENCH_DNS: JSON.stringify(records) },
        }),
      )
      await waitForSmtpGreeting(port)
      ports.set(target.mode, port)
      pids.set(target.mode, children.at(-1)!.pid)
    }
    // A history for the durable path before anything is measured (see refreshStatistics).
    const load = (port: number, sessions: number, seconds: number) =>
      runJson<Result>([process.execPath, `${dir}/smtp-load.ts`, String(port), String(sessions), String(seconds), MAIL_FROM, inbox.address, messageFile])
    await load(ports.get('durable')!, 20, 2)
    // the same for the service's processes (each warms its own JIT)
    await load(ports.get('service')!, 20, 2)
    for (const sessions of SESSIONS) {
      for (const target of TARGETS) {
        const port = ports.get(target.mode)!
        const pid = pids.get(target.mode)!
        if (target.mode === 'durable' || target.mode === 'service') await refreshStatistics(sql)
        const cpuBefore = processTreeCpuMicros(pid)
        const mainBefore = processCpuMicros(pid, pid)
        const dbBefore = await databaseCpu(sql)
        const r = await load(port, sessions, SECONDS)
        const cpuAfter = processTreeCpuMicros(pid)
        const mainAfter = processCpuMicros(pid, pid)
        r.server_cpu_us_per_msg = cpuBefore !== null && cpuAfter !== null && r.completed ? Math.round((cpuAfter - cpuBefore) / r.completed) : null
        r.server_main_cpu_us_per_msg = mainBefore !== null && mainAfter !== null && r.completed ? Math.round((mainAfter - mainBefore) / r.completed) : null
        const dbSpent = target.mode === 'durable' || target.mode === 'service' ? databaseCpuSpent(dbBefore, await databaseCpu(sql)) : null
        r.db_cpu_us_per_msg = dbSpent !== null && r.completed ? Math.round(dbSpent / r.completed) : null
        results.get(target.mode)!.push(r)
      }
    }
  } finally {
    await stopAll(children)
    await rm(messageFile, { force: true })
  }

  const cpu = (us: number | null | undefined) => (us === null || us === undefined ? 'n/a' : String(us))
  const row = (label: string, target: Mode, r: Result) =>
    `${label.padEnd(28)}${String(r.sessions).padStart(9)}${String(r.mps).padStart(10)}${r.p50_ms.toFixed(2).padStart(10)}${r.p99_ms.toFixed(2).padStart(10)}${String(r.errors).padStart(8)}` +
    `${cpu(r.server_cpu_us_per_msg).padStart(12)}${String(r.client_cpu_us_per_msg).padStart(12)}${(target === 'durable' || target === 'service' ? cpu(r.db_cpu_us_per_msg) : '').padStart(8)}`
  console.log(
    `${'target'.padEnd(28)}${'sessions'.padStart(9)}${'msg/s'.padStart(10)}${'p50 ms'.padStart(10)}${'p99 ms'.padStart(10)}${'errors'.padStart(8)}` +
      `${'server us'.padStart(12)}${'client us'.padStart(12)}${'db us'.padStart(8)}`,
  )
  for (const target of TARGETS) for (const r of results.get(target.mode) ?? []) console.log(row(target.label, target.mode, r))
  console.log('(server us, client us, db us: CPU time per message of the receiving process, of the load generator and of the PostgreSQL backends)')

  const at = (mode: Mode, sessions: number) => results.get(mode)?.find(r => r.sessions === sessions)
  const ratioLine = (ratio: (ours: Result, theirs: Result) => number | null, mark = '') =>
    SESSIONS.map(n => {
      const ours = at('noop', n)
      const theirs = at('smtp-server', n)
      const value = ours && theirs ? ratio(ours, theirs) : null
      return `${n} ${n === 1 ? 'session' : 'sessions'} ${value === null || !Number.isFinite(value) ? 'n/a' : value.toFixed(2)}${n === 20 ? mark : ''}`
    }).join(', ')
  console.log(`\nratio no-op listener/smtp-server msg/s: ${ratioLine((ours, theirs) => ours.mps / theirs.mps, ' (target >= 1.5)')}`)
  console.log(
    `ratio smtp-server/no-op listener server CPU per message: ${ratioLine((ours, theirs) => (ours.server_cpu_us_per_msg && theirs.server_cpu_us_per_msg ? theirs.server_cpu_us_per_msg / ours.server_cpu_us_per_msg : null))}`,
  )
  const durable = at('durable', 20)
  if (durable) {
    console.log(
      `durable ingest at 20 sessions: ${durable.mps} msg/s parsed, authenticated and committed before the 250 (target >= 1000); ` +
        `end of DATA to 250 p50 ${durable.p50_ms} ms, p99 ${durable.p99_ms} ms; ${cpu(durable.server_cpu_us_per_msg)} us of service CPU per message, ${cpu(durable.server_main_cpu_us_per_msg)} us of it on the main thread`,
    )
  }

  const service = at('service', 20)
  const baseline = at('smtp-server', 20)
  if (service && baseline) {
    console.log(
      `durable ingest by the service (src/index.ts, ROLES=smtp, SMTP_PROCESSES unset = ${availableParallelism()} processes on one port) at 20 sessions: ${service.mps} msg/s, ` +
        `ratio to smtp-server with no storage ${(service.mps / baseline.mps).toFixed(3)} (target >= 0.4); p50 ${service.p50_ms} ms, p99 ${service.p99_ms} ms; ` +
        `${cpu(service.server_cpu_us_per_msg)} us of service CPU (all its processes) and ${cpu(service.db_cpu_us_per_msg)} us of PostgreSQL CPU per message`,
    )
    if (service.server_cpu_us_per_msg) {
      report('smtp ingest', {
        unit: 'message',
        cpu_ms_per_unit: service.server_cpu_us_per_msg / 1000,
        headline: {
          msg_per_s: service.mps,
          ratio: Math.round((service.mps / baseline.mps) * 1000) / 1000,
          p99_ms: service.p99_ms,
        },
        ...(service.db_cpu_us_per_msg && { db_ms_per_unit: service.db_cpu_us_per_msg / 1000 }),
      })
    }
  }

  // The durable runs did the real work: every stored copy carries its verdicts.
  const verdicts = await sql<{ n: number; spf: string; dkim: string; dmarc: string }[]>`
    select count(*)::int as n, auth->'spf'->>'result' as spf, auth->'dkim'->0->>'result' as dkim, auth->'dmarc'->>'result' as dmarc
      from emails where org_id = ${org.org_id} group by 2, 3, 4 order by 1 desc`
  console.log(`durable path stored: ${verdicts.map(v => `${v.n} emails with spf=${v.spf} dkim=${v.dkim} dmarc=${v.dmarc}`).join('; ') || 'nothing'}`)
}
