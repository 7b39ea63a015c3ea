/**
 * Fan-out section of `make bench`: inbound mail to webhook delivery, end to end. The service
 * runs as in production (src/index.ts, roles api, smtp and worker in one process,
 * WEBHOOK_ALLOW_LOOPBACK=true) on the scratch database, with one developer organization, one
 * managed inbox and one HTTP endpoint pointing at a loopback receiver (fanout-receiver.ts).
 * The sender domain's SPF (ip4:127.0.0.1), DKIM key (RSA-2048) and DMARC p=reject come from a
 * loopback DNS stub (dns-stub.ts, DNS_SERVERS), so authentication does real lookups without
 * leaving the machine.
 *
 * A separate process (smtp-rate.ts) delivers messages at a steady offered rate for
 * BENCH_SECONDS over BENCH_FANOUT_CONCURRENCY sessions, each message with its own mark and
 * send time in the subject; it records the epoch time of each 250, the receiver the epoch time
 * each delivery arrives. Per message: 250 to arrival. Per run: p50, p99, deliveries arrived per
 * second from the first message to the last arrival, and every message accounted for. Beside
 * it, the baseline: post-load.ts POSTs to the same receiver with fetch at the worker's
 * job concurrency. Targets (printed, not asserted): p50 < 50 ms and p99 < 250 ms from the 250 to the
 * arrival, at least 500 deliveries/s.
 */
import { generateKeyPairSync } from 'node:crypto'
import { rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { randomUUIDv7 } from 'bun'
import { report } from './guard'
import { dkimSign } from 'mailauth/lib/dkim/sign'
import type { Sql } from '../../src/db/client'
import { systemResolver, type MemoryRecords } from '../../src/dns/resolver'
import { createOrgCommand } from '../../src/admin/commands'
import { createManagedInbox } from '../../src/inboxes/service'
import { createApiKey } from '../../src/auth/api-keys'
import { DEFAULT_CONCURRENCY } from '../../src/jobs/worker'
import {
  databaseCpu,
  databaseCpuSpent,
  freePort,
  percentile,
  processCpuMicros,
  refreshStatistics,
  runJson,
  startService,
  stopAll,
  waitForHttp,
  waitForSmtpGreeting,
} from './common'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const RATES = (process.env.BENCH_FANOUT_RATES ?? '100,500,750').split(',').map(Number)
/**
 * `split` (the default): the service as two processes on the one database, roles api and smtp in
 * one and api and worker in the other (the api role only for the health check), as a host with
 * more than one core runs it; `single`: one process with all three roles.
 */
const LAYOUT = process.env.BENCH_FANOUT_LAYOUT === 'single' ? 'single' : 'split'
/** SMTP sessions of the sender */
const CONCURRENCY = Number(process.env.BENCH_FANOUT_CONCURRENCY ?? 8)
/** enough history that the tables are not tiny when their statistics are taken (refreshStatistics) */
const WARMUP_MESSAGES = 1000
/** how long deliveries may trail the last 250 before the missing ones are reported */
const DRAIN_MS = 60_000 + 10_000 * SECONDS
const dir = import.meta.dir

const MANAGED_DOMAIN = 'agents.bench.local'
const SENDER_DOMAIN = 'sender.bench.example'
const MAIL_FROM = `bench@${SENDER_DOMAIN}`
const SELECTOR = 'bench'
const SECRET = 'bench-secret-0123456789abcdef0123456789'

interface RateResult {
  count: number
  acked: number
  errors: number
  offered_rate: number
  started_at: number
  accepted_per_s: number
  max_lag_ms: number
  data_p50_ms: number
  data_p99_ms: number
  acks: [number, number][]
}

interface Arrivals {
  arrivals: Record<string, number>
  requests: number
  duplicates: number
  unmarked: number
  body_bytes: number
}

interface LoadResult {
  requests: number
  errors: number
  rps: number
  p50_ms: number
  p99_ms: number
}

/**
 * A text + HTML message of about 2 KB from the sender domain, DKIM-signed once. `@@MARK@@` in
 * the subject and `@@ID@@` in the Message-ID are filled in per message by the sender, so the
 * signature covers neither (h= lists From, To, Date, MIME-Version and Content-Type).
 */
async function template(rcpt: string, privateKey: string): Promise<string> {
  const sentence = 'Status update from the build agent: all checks passed, the report is attached below'
  const lines = Array.from({ length: 10 }, (_, i) => `${i + 1}. ${sentence}`)
  const message = [
    `From: Bench Sender <${MAIL_FROM}>`,
    `To: <${rcpt}>`,
    'Subject: fanout @@MARK@@',
    `Date: ${new Date().toUTCString()}`,
    `Message-ID: <@@ID@@@${SENDER_DOMAIN}>`,
    'MIME-Version: 1.0',
    'Content-Type: multipart/alternative; boundary="bench-boundary"',
    '',
    '--bench-boundary',
    'Content-Type: text/plain; charset=utf-8',
    '',
    ...lines,
    '--bench-boundary',
    'Content-Type: text/html; charset=utf-8',
    '',
    `<html><body>${lines.map(l => `<p>${l}</p>`).join('\r\n')}</body></html>`,
    '--bench-boundary--',
    '',
  ].join('\r\n')
  const r = await dkimSign(message, {
    canonicalization: 'relaxed/relaxed',
    headerList: ['From', 'To', 'Date', 'MIME-Version', 'Content-Type'],
    signatureData: [{ signingDomain: SENDER_DOMAIN, selector: SELECTOR, privateKey }],
  } as never)
  if (!r.signatures) throw new Error(`DKIM signing failed: ${JSON.stringify(r.errors)}`)
  return r.signatures + message
}

async function waitForDns(port: number): Promise<void> {
  const resolve = systemResolver([`127.0.0.1:${port}`])
  for (let i = 0; i < 100; i++) {
    if (
      await resolve(SENDER_DOMAIN, 'TXT').then(
        () => true,
        () => false,
      )
    )
      return
    await Bun.sleep(100)
  }
  throw new Error(`DNS stub on port ${port} did not come up`)
}

async function waitForArrivals(receiverUrl: string, expected: number): Promise<void> {
  const deadline = Date.now() + DRAIN_MS
  while (Date.now() < deadline) {
    if (Number(await (await fetch(`${receiverUrl}/count`)).text()) >= expected) return
    await Bun.sleep(50)
  }
}

interface Run {
  rate: number
  sender: RateResult
  arrived: number
  missing: string[]
  duplicates: number
  p50: number
  p99: number
  max: number
  deliveriesPerSecond: number
  cpuUsPerMessage: number | null
  dbUsPerMessage: number | null
  /** seconds after the first scheduled send: the first and the last arrival */
  arrivalSpan: [number, number]
}

export interface FanoutOptions {
  /** http: an HTTP endpoint on the receiver; function: a routed function that forwards each event to it */
  target?: 'http' | 'function'
  rates?: number[]
  /** split: two processes (api+smtp, api+worker); single: one with every role. Default BENCH_FANOUT_LAYOUT, else split */
  layout?: 'split' | 'single'
}

/** A function that forwards each delivery to the receiver: its arrival marks the function's completion. */
const forwardingFunction = (receiverUrl: string) => `export default {
  async fetch(request) {
    const res = await fetch(${JSON.stringify(`${receiverUrl}/hook`)}, { method: 'POST', body: await request.text(), headers: { 'content-type': 'application/json' } })
    return new Response(null, { status: res.ok ? 200 : 502 })
  },
}`

/** Deploys the forwarding function through the API and routes it to the org-wide fallback. */
async function deployForwarder(sql: Sql, orgId: string, apiUrl: string, receiverUrl: string) {
  const key = await sql.begin(tx => createApiKey(tx, orgId, null, 'bench'))
  const call = async (method: string, path: string, body: unknown) => {
    const res = await fetch(`${apiUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    const json = (await res.json()) as { data?: { id: string; deploy_status?: string } }
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`)
    return json.data!
  }
  const fn = await call('POST', '/v1/functions', { name: 'fanout-forwarder', code: forwardingFunction(receiverUrl) })
  if (fn.deploy_status !== 'deployed') throw new Error(`the bench function did not deploy: ${JSON.stringify(fn)}`)
  await call('PUT', `/v1/functions/${fn.id}/route`, { domain_id: null })
}

/** Runs the section; returns, for each offered rate, the deliveries per second sustained. */
export async function fanoutBench(
  sql: Sql,
  dbUrl: string,
  opts: FanoutOptions = {},
): Promise<{ rate: number; deliveriesPerSecond: number; missing: number }[]> {
  const target = opts.target ?? 'http'
  const layout = opts.layout ?? LAYOUT
  const rates = opts.rates ?? RATES
  const org = await createOrgCommand(sql, { plan: 'developer', name: 'fanout bench' })
  const inbox = await sql.begin(tx => createManagedInbox(tx, org.org_id, MANAGED_DOMAIN))
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const records: MemoryRecords = {
    [`${SELECTOR}._domainkey.${SENDER_DOMAIN}`]: { TXT: [[`v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`]] },
    [SENDER_DOMAIN]: { TXT: [['v=spf1 ip4:127.0.0.1 -all']] },
    [`_dmarc.${SENDER_DOMAIN}`]: { TXT: [['v=DMARC1; p=reject']] },
  }
  const message = await template(inbox.address, privateKey.export({ type: 'pkcs8', format: 'pem' }) as string)
  const templateFile = `${tmpdir()}/agent-mail-bench-${crypto.randomUUID()}.eml`
  await Bun.write(templateFile, message)

  const children: Bun.Subprocess[] = []
  const runs: Run[] = []
  let baseline: LoadResult
  let bodyBytes = 0
  try {
    const receiverPort = await freePort()
    const receiverUrl = `http://127.0.0.1:${receiverPort}`
    children.push(Bun.spawn([process.execPath, `${dir}/fanout-receiver.ts`, String(receiverPort)], { stdout: 'ignore', stderr: 'inherit' }))
    await waitForHttp(`${receiverUrl}/health`)
    if (target === 'http') {
      await sql`
        insert into endpoints (id, org_id, kind, url, enabled, domain_id, is_route_target, rules)
        values (${randomUUIDv7()}, ${org.org_id}, 'http', ${`${receiverUrl}/hook`}, true, null, false, '{}')`
    }

    const dnsPort = await freePort()
    children.push(
      Bun.spawn([process.execPath, `${dir}/dns-stub.ts`, String(dnsPort)], {
        stdout: 'ignore',
        stderr: 'inherit',
        env: { ...process.env, BENCH_DNS: JSON.stringify(records) },
      }),
    )
    await waitForDns(dnsPort)

    const smtpPort = await freePort()
    // one JSON line per job attempt and per SMTP connection, to /dev/null: part of the cost, as in production
    const serviceEnv = {
      DATABASE_URL: dbUrl,
      SMTP_PORT: String(smtpPort),
      HOST: '127.0.0.1',
      SECRET_KEY: SECRET,
      MANAGED_DOMAIN,
      SMTP_HOSTNAME: 'mx.bench.local',
      DNS_SERVERS: `127.0.0.1:${dnsPort}`,
      WEBHOOK_ALLOW_LOOPBACK: 'true',
      LOG_LEVEL: 'info',
    }
    const roles = layout === 'split' ? ['api,smtp', 'api,worker'] : ['api,smtp,worker']
    const services: Bun.Subprocess[] = []
    const apiPorts: number[] = []
    for (const ROLES of roles) {
      const port = await freePort()
      apiPorts.push(port)
      services.push(await startService(children, { ...serviceEnv, ROLES, PORT: String(port) }))
    }
    if (target === 'function') await deployForwarder(sql, org.org_id, `http://127.0.0.1:${apiPorts[0]}`, receiverUrl)
    await waitForSmtpGreeting(smtpPort)
    const serviceCpu = () => {
      const each = services.map(s => processCpuMicros(s.pid))
      return each.includes(null) ? null : (each as number[]).reduce((a, b) => a + b, 0)
    }

    const send = (rate: number, count: number, prefix: string) =>
      runJson<RateResult>([
        process.execPath,
        `${dir}/smtp-rate.ts`,
        String(smtpPort),
        String(CONCURRENCY),
        String(rate),
        String(count),
        MAIL_FROM,
        inbox.address,
        templateFile,
        prefix,
      ])

    console.log(
      `\nfanout: ${message.length}-byte text+html messages, DKIM-signed, SPF/DKIM/DMARC records from a loopback DNS stub; ` +
        `1 organization, 1 managed inbox, ${target === 'http' ? '1 HTTP endpoint on a loopback receiver' : '1 function (QuickJS) that forwards each event to a loopback receiver with fetch'}; ` +
        `${layout === 'split' ? 'two service processes, roles api+smtp and api+worker' : 'one service process with roles api, smtp and worker'} ` +
        `(${DEFAULT_CONCURRENCY} concurrent jobs); ${CONCURRENCY} SMTP sessions, ${SECONDS} s per offered rate after ${WARMUP_MESSAGES} warm-up messages, statistics refreshed before each; ` +
        `latency = the sender's 250 to the ${target === 'http' ? "webhook's arrival" : "function's forward arriving (the function completed)"}; load average ${loadavg()[0]!.toFixed(2)} before the runs\n`,
    )

    // warm-up: connections, JIT, the webhook secret, and a history of messages and deliveries
    const warm = await send(200, WARMUP_MESSAGES, 'warmup')
    await waitForArrivals(receiverUrl, warm.acked)

    for (const rate of rates) {
      await fetch(`${receiverUrl}/reset`, { method: 'POST' })
      await refreshStatistics(sql)
      const prefix = `r${rate}`
      const cpuBefore = serviceCpu()
      const dbBefore = await databaseCpu(sql)
      const sender = await send(rate, Math.round(rate * SECONDS), prefix)
      await waitForArrivals(receiverUrl, sender.acked)
      const cpuAfter = serviceCpu()
      const dbSpent = databaseCpuSpent(dbBefore, await databaseCpu(sql))
      const got = (await (await fetch(`${receiverUrl}/results`)).json()) as Arrivals
      bodyBytes = got.body_bytes
      const latencies: number[] = []
      const missing: string[] = []
      let firstArrival = Infinity
      let lastArrival = sender.started_at
      for (const [i, ackAt] of sender.acks) {
        const arrivedAt = got.arrivals[`${prefix}-${i}`]
        if (arrivedAt === undefined) {
          missing.push(`${prefix}-${i}`)
          continue
        }
        latencies.push(arrivedAt - ackAt)
        firstArrival = Math.min(firstArrival, arrivedAt)
        lastArrival = Math.max(lastArrival, arrivedAt)
      }
      latencies.sort((a, b) => a - b)
      runs.push({
        rate,
        sender,
        arrived: latencies.length,
        missing,
        duplicates: got.duplicates,
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        max: percentile(latencies, 100),
        deliveriesPerSecond: Math.round(latencies.length / ((lastArrival - sender.started_at) / 1000)),
        cpuUsPerMessage: cpuBefore !== null && cpuAfter !== null && latencies.length ? Math.round((cpuAfter - cpuBefore) / latencies.length) : null,
        dbUsPerMessage: dbSpent !== null && latencies.length ? Math.round(dbSpent / latencies.length) : null,
        arrivalSpan: [(firstArrival - sender.started_at) / 1000, (lastArrival - sender.started_at) / 1000],
      })
    }

    baseline = await runJson<LoadResult>([
      process.execPath,
      `${dir}/post-load.ts`,
      `${receiverUrl}/baseline`,
      String(DEFAULT_CONCURRENCY),
      String(SECONDS),
      String(bodyBytes || 4096),
    ])
  } finally {
    await stopAll(children)
    await rm(templateFile, { force: true })
  }

  const n = (v: number | string) => String(v).padStart(10)
  console.log(
    `${'offered msg/s'.padEnd(16)}${n('messages')}${n('250/s')}${n('lag ms')}${n('deliv/s')}${n('p50 ms')}${n('p99 ms')}${n('max ms')}${n('missing')}${n('server us')}${n('db us')}`,
  )
  for (const r of runs) {
    console.log(
      `${String(r.rate).padEnd(16)}${n(r.sender.count)}${n(r.sender.accepted_per_s)}${n(r.sender.max_lag_ms)}${n(r.deliveriesPerSecond)}` +
        `${n(r.p50.toFixed(2))}${n(r.p99.toFixed(2))}${n(r.max.toFixed(2))}${n(r.missing.length + (r.sender.count - r.sender.acked))}${n(r.cpuUsPerMessage ?? 'n/a')}${n(r.dbUsPerMessage ?? 'n/a')}`,
    )
  }
  console.log(
    '(250/s: messages the service accepted per second; lag ms: how far the sender fell behind its schedule; deliv/s: deliveries arrived per second ' +
      'from the first message to the last arrival; p50/p99/max: 250 to arrival; server us, db us: CPU time per delivered message of the service ' +
      'process and of its PostgreSQL backends)',
  )
  console.log(`\n${'baseline'.padEnd(40)}${n('req/s')}${n('p50 ms')}${n('p99 ms')}${n('errors')}`)
  console.log(
    `${`fetch POST ${bodyBytes} B, ${DEFAULT_CONCURRENCY} clients`.padEnd(40)}${n(baseline!.rps)}${n(baseline!.p50_ms.toFixed(2))}${n(baseline!.p99_ms.toFixed(2))}${n(baseline!.errors)}`,
  )

  for (const r of runs) {
    const notAcked = r.sender.count - r.sender.acked
    const problems = [
      r.missing.length ? `${r.missing.length} accepted but never delivered (${r.missing.slice(0, 5).join(', ')}${r.missing.length > 5 ? ', ...' : ''})` : '',
      notAcked ? `${notAcked} not accepted by SMTP (${r.sender.errors} errors)` : '',
      r.duplicates ? `${r.duplicates} delivered twice` : '',
    ].filter(Boolean)
    console.log(
      `\nat ${r.rate} msg/s offered: 250 to arrival p50 ${r.p50} ms (target < 50), p99 ${r.p99} ms (target < 250); ` +
        `${r.deliveriesPerSecond} deliveries/s sustained (target >= 500); ${problems.length ? problems.join('; ') : `all ${r.arrived} messages delivered once`}; ` +
        `sending took ${(r.sender.count / r.rate).toFixed(1)} s, deliveries arrived from +${r.arrivalSpan[0].toFixed(1)} s to +${r.arrivalSpan[1].toFixed(1)} s`,
    )
  }

  const statuses = await sql<{ status: string; n: number }[]>`
    select status, count(*)::int as n from webhook_deliveries where org_id = ${org.org_id} group by 1 order by 2 desc`
  const verdicts = await sql<{ n: number; spf: string; dkim: string; dmarc: string }[]>`
    select count(*)::int as n, auth->'spf'->>'result' as spf, auth->'dkim'->0->>'result' as dkim, auth->'dmarc'->>'result' as dmarc
      from emails where org_id = ${org.org_id} group by 2, 3, 4 order by 1 desc`
  for (const r of runs) {
    if (r.cpuUsPerMessage === null) continue
    report(`fan-out ${target === 'function' ? 'function ' : ''}${layout === 'split' ? '2 processes ' : ''}${r.rate}/s`, {
      unit: 'delivery',
      cpu_ms_per_unit: r.cpuUsPerMessage / 1000,
      ...(r.dbUsPerMessage !== null && { db_ms_per_unit: r.dbUsPerMessage / 1000 }),
      headline: { deliveries_per_s: r.deliveriesPerSecond, p50_ms: r.p50, p99_ms: r.p99 },
    })
  }
  console.log(`deliveries recorded: ${statuses.map(s => `${s.n} ${s.status}`).join(', ') || 'none'}`)
  console.log(`stored: ${verdicts.map(v => `${v.n} emails with spf=${v.spf} dkim=${v.dkim} dmarc=${v.dmarc}`).join('; ') || 'nothing'}`)
  return runs.map(r => ({
    rate: r.rate,
    deliveriesPerSecond: r.deliveriesPerSecond,
    missing: r.missing.length + (r.sender.count - r.sender.acked) + r.duplicates,
  }))
}

/**
 * One process against two (issue 19 item 6): the same SMTP-to-webhook load offered past what
 * either takes (1,500 msg/s), to one process with every role and to two processes (api+smtp,
 * api+worker) on the same PostgreSQL; deliveries/s of each and their ratio.
 */
export async function processesBench(sql: Sql, dbUrl: string): Promise<void> {
  const rates = [Number(process.env.BENCH_PROCESSES_RATE ?? 1500)]
  const [one] = await fanoutBench(sql, dbUrl, { layout: 'single', rates })
  const [two] = await fanoutBench(sql, dbUrl, { layout: 'split', rates })
  console.log(
    `
processes: at ${rates[0]} msg/s offered, one process with every role delivered ${one!.deliveriesPerSecond}/s, two processes ${two!.deliveriesPerSecond}/s: ` +
      `ratio two/one ${(two!.deliveriesPerSecond / one!.deliveriesPerSecond).toFixed(2)}; messages missing, refused or delivered twice: ${one!.missing} and ${two!.missing}`,
  )
}
