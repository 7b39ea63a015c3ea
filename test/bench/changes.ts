/**
 * Changes-feed section of `make bench`: 20 consumers long-poll GET /v1/changes while mail
 * arrives over SMTP at 200 msg/s, next to 20 consumers long-polling GET /v1/emails?wait= in the
 * same run. The service runs as two processes on the scratch database: roles api+smtp receive
 * the mail, the consumers poll the api-only one, so every wake-up crosses processes through
 * NOTIFY (the path of both long-polls). A loopback DNS stub that knows no names answers the
 * authentication lookups at once.
 *
 * Per message and consumer: the sender's 250 (the message committed) to the consumer's response
 * carrying it, on one epoch clock. Targets (printed, not asserted): p50 < 20 ms, p99 < 100 ms,
 * every change seen by every changes consumer exactly once by id.
 */
import { rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import type { Sql } from '../../src/db/client'
import { systemResolver } from '../../src/dns/resolver'
import { createOrgCommand, setApiLimitCommand } from '../../src/admin/commands'
import { createManagedInbox } from '../../src/inboxes/service'
import { freePort, percentile, runJson, startService, stopAll, waitForSmtpGreeting } from './common'

const CONSUMERS = Number(process.env.BENCH_CHANGES_CONSUMERS ?? 20)
const RATE = Number(process.env.BENCH_CHANGES_RATE ?? 200)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const SESSIONS = 8
const MANAGED_DOMAIN = 'agents.bench.local'
const MAIL_FROM = 'bench@sender.bench.example'
const dir = import.meta.dir

interface RateResult {
  count: number
  acked: number
  acks: [number, number][]
}
interface Consumed {
  consumers: [number, number][][]
  duplicates: number
}

function summarize(name: string, sender: RateResult, got: Consumed) {
  const ackAt = new Map(sender.acks)
  const latencies: number[] = []
  let missing = 0
  for (const arrivals of got.consumers) {
    const seen = new Map(arrivals)
    for (const [i, ack] of ackAt) {
      const at = seen.get(i)
      if (at === undefined) missing++
      else latencies.push(at - ack)
    }
  }
  latencies.sort((a, b) => a - b)
  const n = (v: number | string) => String(v).padStart(10)
  console.log(
    `${name.padEnd(28)}${n(got.consumers.length)}${n(latencies.length)}${n(percentile(latencies, 50).toFixed(2))}${n(percentile(latencies, 99).toFixed(2))}${n(percentile(latencies, 100).toFixed(2))}${n(missing)}${n(got.duplicates)}`,
  )
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), missing, duplicates: got.duplicates }
}

export async function changesBench(sql: Sql, dbUrl: string): Promise<void> {
  const org = await createOrgCommand(sql, { plan: 'developer', name: 'changes bench' })
  // 40 consumers answered once per message or so: the plan's 3000/min would turn the run into a 429 benchmark
  await setApiLimitCommand(sql, org.org_id, '100000000')
  const inbox = await sql.begin(tx => createManagedInbox(tx, org.org_id, MANAGED_DOMAIN))
  const message = [
    'From: Bench <bench@sender.bench.example>',
    `To: <${inbox.address}>`,
    'Subject: changes @@MARK@@',
    'Message-ID: <@@ID@@@sender.bench.example>',
    '',
    'hello',
    '',
  ].join('\r\n')
  const templateFile = `${tmpdir()}/agent-mail-changes-${crypto.randomUUID()}.eml`
  await Bun.write(templateFile, message)
  const children: Bun.Subprocess[] = []
  try {
    const dnsPort = await freePort()
    children.push(
      Bun.spawn([process.execPath, `${dir}/dns-stub.ts`, String(dnsPort)], { stdout: 'ignore', stderr: 'inherit', env: { ...process.env, BENCH_DNS: '{}' } }),
    )
    const probe = systemResolver([`127.0.0.1:${dnsPort}`])
    for (
      let i = 0;
      i < 100 &&
      !(await probe('probe.bench', 'TXT').then(
        () => true,
        (e: { code?: string }) => e.code === 'ENOTFOUND',
      ));
      i++
    )
      await Bun.sleep(50)
    const smtpPort = await freePort()
    const env = {
      DATABASE_URL: dbUrl,
      SMTP_PORT: String(smtpPort),
      HOST: '127.0.0.1',
      SECRET_KEY: 'bench-secret-0123456789abcdef0123456789',
      MANAGED_DOMAIN,
      SMTP_HOSTNAME: 'mx.bench.local',
      DNS_SERVERS: `127.0.0.1:${dnsPort}`,
      LOG_LEVEL: 'info',
    }
    await startService(children, { ...env, ROLES: 'api,smtp', PORT: String(await freePort()) })
    const apiPort = await freePort()
    await startService(children, { ...env, ROLES: 'api', PORT: String(apiPort) })
    await waitForSmtpGreeting(smtpPort)
    const apiUrl = `http://127.0.0.1:${apiPort}`

    const send = (count: number, prefix: string) =>
      runJson<RateResult>([
        process.execPath,
        `${dir}/smtp-rate.ts`,
        String(smtpPort),
        String(SESSIONS),
        String(RATE),
        String(count),
        MAIL_FROM,
        inbox.address,
        templateFile,
        prefix,
      ])
    await send(200, 'warmup')

    const count = Math.round(RATE * SECONDS)
    const deadline = String(SECONDS * 1000 + 30_000)
    const consume = (mode: string) =>
      runJson<Consumed>([process.execPath, `${dir}/changes-consumers.ts`, mode, apiUrl, org.api_key, String(CONSUMERS), 'run', String(count), deadline])
    const changes = consume('changes')
    const emails = consume('emails')
    // the consumers are polling before the first message
    await Bun.sleep(1000)
    const sender = await send(count, 'run')
    const [c, e] = await Promise.all([changes, emails])

    console.log(
      `\nchanges: ${CONSUMERS} consumers long-polling GET /v1/changes and ${CONSUMERS} long-polling GET /v1/emails?wait=, side by side, on an api-only process; ` +
        `mail over SMTP to the api+smtp process at ${RATE} msg/s for ${SECONDS} s (${sender.acked} of ${sender.count} accepted); latency = the sender's 250 to the consumer's response; load average ${loadavg()[0]!.toFixed(2)}\n`,
    )
    const n = (v: string) => v.padStart(10)
    console.log(`${''.padEnd(28)}${n('consumers')}${n('seen')}${n('p50 ms')}${n('p99 ms')}${n('max ms')}${n('missing')}${n('twice')}`)
    const feed = summarize('GET /v1/changes?wait=', sender, c)
    summarize('GET /v1/emails?wait=', sender, e)
    const verdict = feed.p50 < 20 && feed.p99 < 100 && feed.missing === 0 && feed.duplicates === 0
    console.log(`target (changes): p50 < 20 ms, p99 < 100 ms, every change seen by every consumer exactly once: ${verdict ? 'met' : 'NOT met'}`)
  } finally {
    await stopAll(children)
    await rm(templateFile, { force: true })
  }
}
